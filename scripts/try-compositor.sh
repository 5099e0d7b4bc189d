#!/usr/bin/env bash
# What works on a compositor, measured: starts it headless (as uid 65534 when run as root, with
# a runtime directory of its own), a broker of its own on it, and walks the scene cycle a user
# would, printing one line per fact. The README's compositor table is these lines.
#
#   bash scripts/try-compositor.sh sway|weston|mutter|kwin|cage
#   SWAY_CONFIG='focus_on_window_activation focus' bash scripts/try-compositor.sh sway
#
# WINDOWBROKER_BIN_DIR: where windowbrokerd, wmctl and notes are (default: swift build's).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: try-compositor.sh sway|weston|mutter|kwin|cage}
SOCKET=wayland-1
[ "$NAME" = cage ] && SOCKET=wayland-0  # cage picks its own
BIN=${WINDOWBROKER_BIN_DIR:-$(swift build --show-bin-path)}
ROOT=$(mktemp -d /tmp/windowbroker-try.XXXXXX)
chmod 755 "$ROOT"
mkdir -p "$ROOT/c/run" "$ROOT/c/home" "$ROOT/b/run" "$ROOT/b/state" "$ROOT/b/notes"
chmod 700 "$ROOT/b/run"
as=()
if [ "$(id -u)" = 0 ]; then
  chown -R 65534:65534 "$ROOT/c"
  as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
chmod 700 "$ROOT/c/run"
COMPOSITOR_PID=""
BROKER_PID=""
cleanup() {
  [ -n "$BROKER_PID" ] && kill "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null || true
  stop_compositor
  rm -rf "$ROOT"
}
trap cleanup EXIT

# Each compositor headless, on the socket $ROOT/c/run/$SOCKET; COMPOSITOR_PID is its process
# (exec: the background subshell becomes it), or dbus-run-session's, its parent.
start_compositor() {
  local env=(env -i HOME="$ROOT/c/home" XDG_RUNTIME_DIR="$ROOT/c/run" PATH=/usr/bin:/bin)
  case "$NAME" in
    sway)
      printf 'output HEADLESS-1 resolution 1280x720\ndefault_border none\n%s\n' "${SWAY_CONFIG:-}" >"$ROOT/c/config"; chmod 644 "$ROOT/c/config"
      exec "${as[@]}" "${env[@]}" WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman sway -c "$ROOT/c/config" ;;
    weston)
      exec "${as[@]}" "${env[@]}" weston --backend=headless-backend.so --socket=wayland-1 --width=1280 --height=720 --idle-time=0 ;;
    mutter)
      exec "${as[@]}" "${env[@]}" dbus-run-session -- mutter --headless --wayland --no-x11 --wayland-display=wayland-1 --virtual-monitor 1280x720 ;;
    kwin)
      # Its file capability (CAP_SYS_NICE) makes an unprivileged exec fail: a copy has none.
      cp /usr/bin/kwin_wayland "$ROOT/c/kwin_wayland"
      exec "${as[@]}" "${env[@]}" QT_QPA_PLATFORM=offscreen dbus-run-session -- "$ROOT/c/kwin_wayland" --virtual --socket wayland-1 --width 1280 --height 720 --no-lockscreen --no-global-shortcuts ;;
    cage)
      exec "${as[@]}" "${env[@]}" WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman cage -- sleep 100000 ;;
    *) echo "unknown compositor: $NAME" >&2; exit 2 ;;
  esac >>"$ROOT/compositor.log" 2>&1 &
  COMPOSITOR_PID=$!
  for _ in $(seq 150); do [ -S "$ROOT/c/run/$SOCKET" ] && return 0; sleep 0.1; done
  echo "$NAME did not start:"; tail -20 "$ROOT/compositor.log"; exit 1
}
stop_compositor() {
  [ -n "$COMPOSITOR_PID" ] || return 0
  # As a crash would: its children too (mutter and KWin run under dbus-run-session).
  pkill -KILL -P "$COMPOSITOR_PID" 2>/dev/null || true
  kill -KILL "$COMPOSITOR_PID" 2>/dev/null || true
  wait "$COMPOSITOR_PID" 2>/dev/null || true
  COMPOSITOR_PID=""
  rm -f "$ROOT/c/run/$SOCKET" "$ROOT/c/run/$SOCKET.lock"
}

wmctl() { WINDOWBROKER_SOCKET="$ROOT/b/run/windowbroker/control.sock" "$BIN/wmctl" "$@"; }
field() { python3 -c "import json,sys; v=json.load(sys.stdin); print($1)"; }
state_of() { wmctl --json send "$1" state | field "v['value']$2"; }
# Waits up to $1 tenths of a second for the command after it to succeed.
within() { local n=$1; shift; for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
fact() { printf '%-34s %s\n' "$1" "$2"; }

# The notes app as the tests run it (scene-probe: notes with a `state` action that says what the
# scene was told: its window's sizes, whether it has the keyboard).
mkdir -p "$ROOT/b/apps"
python3 - "$BIN/scene-probe" "$ROOT/b/apps/notes.json" <<'PY'
import json, sys
app = json.load(open("apps/notes.json")); overlay = json.load(open("Sources/scene-probe/actions.json"))
app["executable"] = sys.argv[1]; app.pop("zygote", None); app["actions"] = app.get("actions", []) + overlay.get("actions", [])
json.dump(app, open(sys.argv[2], "w"))
PY
start_compositor
env -i HOME="$ROOT/b" PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$ROOT/b/run" XDG_STATE_HOME="$ROOT/b/state" NOTES_DATA_DIR="$ROOT/b/notes" \
  WAYLAND_DISPLAY="$ROOT/c/run/$SOCKET" GSK_RENDERER=cairo \
  "$BIN/windowbrokerd" --apps-dir "$ROOT/b/apps" --dbus off --restore-workspace never >"$ROOT/broker.log" 2>&1 &
BROKER_PID=$!
within 100 wmctl status || { echo "the broker did not start"; tail "$ROOT/broker.log"; exit 1; }

echo "== $NAME"
open_note() { wmctl --json open notes --activity notes.edit --title "$1" --info "noteID=$1" | field "v['session']"; }
A=$(open_note first)
sized() { [ "$(state_of "$1" "['sizes']" 2>/dev/null)" != "[]" ]; }
if within 100 sized "$A"; then fact "a scene's window is mapped" "yes ($(state_of "$A" "['sizes'][-1]"))"; else fact "a scene's window is mapped" "no"; fi
wmctl send "$A" type --arg "text=kept" >/dev/null
B=$(open_note second)
within 100 sized "$B" || true
has_keyboard() { [ "$(state_of "$1" "['isKey']")" = True ]; }
focus_reported=yes
if within 20 has_keyboard "$B"; then fact "a new window gets the keyboard" "yes"
elif has_keyboard "$A"; then fact "a new window gets the keyboard" "no (the first one keeps it)"
else fact "a new window gets the keyboard" "no: no window ever has it (no keyboard on the seat)"; focus_reported=no; fi
key_of() { wmctl --json sessions | field "[s['id'] for s in v if s.get('key')]"; }
detail=$(wmctl --json activate "$A" | field "v['detail']")
sleep 0.5
if [ $focus_reported = no ]; then fact "activate moves the keyboard" "n/a: the key scene is the broker's choice"
elif has_keyboard "$A"; then fact "activate moves the keyboard" "yes"
elif [ -n "$detail" ]; then fact "activate moves the keyboard" "no: refused, and said so ($(key_of | grep -q "$B" && echo "key stays with the focused window" || echo "key: $(key_of)"))"
else fact "activate moves the keyboard" "no, and the key scene is wrong"; fi
wmctl background "$A" >/dev/null && wmctl reclaim "$A" >/dev/null && wmctl activate "$A" >/dev/null
if [ "$(state_of "$A" "['text']")" = kept ] && within 50 sized "$A"; then fact "reclaim and restore" "yes (window back, text kept)"; else fact "reclaim and restore" "no"; fi
stop_compositor
lost() { [ "$(wmctl --json sessions | field "[s.get('lastDisconnect') for s in v if s['id']=='$A'][0]")" = compositorLost ]; }
if within 100 lost; then fact "compositor gone: scenes saved" "yes (compositorLost)"; else fact "compositor gone: scenes saved" "no: $(wmctl --json sessions | field "[s.get('lastDisconnect') for s in v]")"; fi
start_compositor
back() { [ "$(wmctl --json sessions | field "[s['state'] for s in v if s['id']=='$A'][0]")" = foregroundActive ] && sized "$A"; }
if within 150 back; then fact "compositor back: windows back" "yes"; else fact "compositor back: windows back" "no"; fi
