#!/usr/bin/env bash
# A guided tour: starts a broker with the bundled notes app in a private directory, walks
# through open / edit / background / reclaim / restore / discard, and stops it again. Scenes
# are windows: on a desktop (WAYLAND_DISPLAY set) they appear there; otherwise the tour starts
# a headless sway of its own and saves screenshots (PNG) whose paths it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${WINDOWBROKER_BIN_DIR:-$(swift build --show-bin-path)}
# The bundled apps' manifests: the repository's (notes found beside the broker), or an
# installed package's (WINDOWBROKER_APPS_DIR=/usr/share/windowbroker/apps, notes in libexec).
APPS=${WINDOWBROKER_APPS_DIR:-apps}
DEMO=$(mktemp -d /tmp/windowbroker-demo.XXXXXX)
export XDG_RUNTIME_DIR=$DEMO/run XDG_STATE_HOME=$DEMO/state NOTES_DATA_DIR=$DEMO/notes
export WINDOWBROKER_SOCKET=$XDG_RUNTIME_DIR/windowbroker/control.sock
BROKER_PID=""
SWAY_PID=""
SHOTS=${DEMO_SCREENSHOTS:-/tmp/windowbroker-demo-screenshots}
cleanup() {
  [ -n "$BROKER_PID" ] && kill "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null || true
  [ -n "${KEYBOARD_PID:-}" ] && kill "$KEYBOARD_PID" 2>/dev/null || true
  [ -n "$SWAY_PID" ] && kill "$SWAY_PID" 2>/dev/null && wait "$SWAY_PID" 2>/dev/null || true
  rm -rf "$DEMO"
}
trap cleanup EXIT

bold=$(tput bold 2>/dev/null || true); plain=$(tput sgr0 2>/dev/null || true)
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run() { printf '%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }
wmctl() { "$BIN/wmctl" "$@"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

# Windows: the user's compositor, or a headless sway run as an unprivileged user (it refuses root).
shot() { :; }
if [ -z "${WAYLAND_DISPLAY:-}" ] && command -v sway >/dev/null && command -v grim >/dev/null; then
  SWAY=$DEMO/sway; mkdir -p "$SHOTS"
  source scripts/headless-sway.sh
  start_headless_sway "$SWAY" "$DEMO/sway.log"
  export GSK_RENDERER=cairo  # no GPU here: GTK's GL renderer would run on the CPU, in Mesa's llvmpipe
  shot() { sleep 0.5; grim "$SHOTS/$1.png" && echo "screenshot: $SHOTS/$1.png"; }
  echo "no display given: scenes are windows on a headless sway; screenshots go to $SHOTS"
elif [ -n "${WAYLAND_DISPLAY:-}" ]; then
  echo "scenes open as windows on your desktop ($WAYLAND_DISPLAY)"
fi

say "Starting windowbrokerd with the bundled apps (log: $DEMO/broker.log)"
"$BIN/windowbrokerd" --apps-dir "$APPS" --log-level info >"$DEMO/broker.log" 2>&1 &
BROKER_PID=$!
for _ in $(seq 100); do wmctl status >/dev/null 2>&1 && break; sleep 0.1; done
run wmctl status
run wmctl apps

say "Open a note in a new window: one worker process per scene"
start=$(date +%s%N)
SESSION=$(wmctl --json open notes --activity notes.edit --title "Packing list" --info noteID=packing | field "['session']")
echo "session $SESSION is foregroundActive after $(( ($(date +%s%N) - start) / 1000000 )) ms (cold open, including wmctl start)"

say "Type into it and move the cursor"
run wmctl send "$SESSION" type --arg "text=socks, passport"
run wmctl send "$SESSION" move-cursor --arg position=5
shot 1-before-reclaim

say "Send it to the background: the broker asks for its restoration activity and commits it"
run wmctl background "$SESSION"

say "Reclaim it: the process goes away, the session stays in the switcher"
run wmctl reclaim "$SESSION"
run wmctl sessions

say "Activate it: a new process, restored (willConnect -> restoreInteractionState -> foreground)"
run wmctl activate "$SESSION"
run wmctl send "$SESSION" note
shot 2-after-restore

say "A second window beside it: both are active, the new one has the keyboard (the key scene)"
OTHER=$(wmctl --json open notes --activity notes.edit --title "Groceries" --info noteID=groceries | field "['session']")
run wmctl sessions
if [ -n "${SWAY:-}" ] && command -v wtype >/dev/null; then
  say "Type with the keyboard: the text lands in the focused window; ctrl+u is the app's Uppercase"
  sleep 0.3
  wtype "milk, eggs"; wtype -M ctrl u -m ctrl
  sleep 0.3
  wmctl --json send "$OTHER" note | field "['value']['text']" | sed 's/^/the focused note now says: /'
fi
shot 3-two-windows
if [ -n "${SWAY:-}" ] && command -v wtype >/dev/null && command -v wl-paste >/dev/null; then
  say "The clipboard is the desktop's: Select All and Copy in the focused window (GTK's editor), any app pastes it"
  wtype -M ctrl a c -m ctrl
  sleep 0.3
  echo "wl-paste reads: $(wl-paste --no-newline)"
fi

say "The scene opens a window itself (SDK requestActivation), prominently: the others are dimmed"
SHEET=$(wmctl --json send "$OTHER" open-in-window --arg noteID=details --arg presentation=prominent | field "['value']['session']")
run wmctl sessions
shot 4-a-sheet-over-its-window
echo "while it is up, activating another scene is refused:"
wmctl activate "$SESSION" || true
say "It closes itself (requestDestruction, a Done button); the scenes behind it are active again"
run wmctl send "$SHEET" dismiss
sleep 0.5
run wmctl sessions

say "Two windows on one note stay in sync: typing in one posts noteChanged, the other follows"
TWIN=$(wmctl --json open notes --new --title "Groceries (2)" --info noteID=groceries | field "['session']")
wmctl send "$OTHER" move-cursor --arg position=1000 >/dev/null
wmctl send "$OTHER" type --arg "text="$'\n'"apples, pears" >/dev/null  # on a line of its own
sleep 0.3
wmctl --json send "$TWIN" note | field "['value']['text']" | sed 's/^/the other window shows: /'
run wmctl post notes ping --wait

say "Shared defaults: one window hides the toolbar, every window of the app follows"
run wmctl send "$OTHER" toggle-toolbar
sleep 0.3
wmctl --json send "$TWIN" note | field "['value']['toolbarHidden']" | sed 's/^/toolbarHidden in the other window: /'
run wmctl defaults notes

say "Search finds a window by its content (accents and ß do not matter) and reopens it"
sleep 1.2
run wmctl search passport
run wmctl search "pass*"

say "The library, notes' other kind of window: every note, newest first (type in it to search)"
LIBRARY=$(wmctl --json open notes | field "['session']")
wmctl --json send "$LIBRARY" items | python3 -c "import json,sys; [print('  ' + i['title']) for i in json.load(sys.stdin)['value']]"
echo "opening one from the library brings its editor forward:"
run wmctl send "$LIBRARY" open --arg noteID=packing
shot 5-the-library

say "Round trips over the control socket"
run wmctl ping --count 200

say "Close (discard) the first note: the app is told, its draft and saved state are deleted"
run wmctl close "$SESSION"
run wmctl sessions

say "Stopping the broker (SIGTERM: every scene saves its state first)"
kill "$BROKER_PID"; wait "$BROKER_PID" || true; BROKER_PID=""
echo "broker stopped; the demo's private directory is removed"
