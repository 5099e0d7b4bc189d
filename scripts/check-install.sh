#!/usr/bin/env bash
# CI's check of `make install` (issue: an install that works anywhere): installs into a temp
# DESTDIR with PREFIX=/usr/local, verifies the installed units against that root (man pages
# included), runs the installed binaries with an empty environment and checks they need no
# toolchain, that the installed broker runs the installed Python example, and that uninstall
# removes everything it installed.
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE=$(mktemp -d /tmp/windowbroker-install.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
make --no-print-directory install DESTDIR="$STAGE" PREFIX=/usr/local >/dev/null
P=$STAGE/usr/local
for f in bin/windowbrokerd bin/wmctl libexec/windowbroker/notes libexec/windowbroker/windowbroker-ui \
         libexec/windowbroker/libwindowbroker-drawing.so share/windowbroker/apps/notes.json \
         lib/systemd/user/windowbroker.service lib/systemd/user/windowbroker.socket \
         share/man/man1/wmctl.1.gz share/man/man1/windowbrokerd.1.gz share/bash-completion/completions/wmctl \
         share/zsh/site-functions/_wmctl share/fish/vendor_completions.d/wmctl.fish \
         share/doc/windowbroker/README.md share/doc/windowbroker/windowbrokerd.conf.example; do
  [ -e "$P/$f" ] || { echo "missing after install: $f"; exit 1; }
done
[ ! -e "$P/bin/notes" ] || { echo "notes must not be in bin"; exit 1; }
# The man pages: every command (nested ones too) and the sections a reader looks for.
if command -v man >/dev/null; then
  WMCTL_PAGE=$(MANWIDTH=100 man -l "$P/share/man/man1/wmctl.1.gz" 2>/dev/null)
  DAEMON_PAGE=$(MANWIDTH=100 man -l "$P/share/man/man1/windowbrokerd.1.gz" 2>/dev/null)
  for want in "pressure simulate <level>" "menu invoke <command>" "ENVIRONMENT" "FILES" "EXAMPLES" "EXIT STATUS"; do
    grep -q -- "$want" <<<"$WMCTL_PAGE" || { echo "wmctl(1) lacks: $want"; exit 1; }
  done
  for want in "SIGNALS" "EXIT STATUS" "ENVIRONMENT" "--dbus"; do
    grep -q -- "$want" <<<"$DAEMON_PAGE" || { echo "windowbrokerd(1) lacks: $want"; exit 1; }
  done
  grep -A2 "SEE ALSO" <<<"$WMCTL_PAGE" | grep -q "wmctl(1)" && { echo "wmctl(1) names itself in SEE ALSO"; exit 1; }
fi
grep -q '^ExecStart=/usr/local/bin/windowbrokerd --stop-timeout 45s$' "$P/lib/systemd/user/windowbroker.service" \
  || { echo "the installed unit's ExecStart is not the installed broker with its stop timeout"; exit 1; }
grep -q '^TimeoutStopSec=60$' "$P/lib/systemd/user/windowbroker.service" \
  || { echo "the installed unit's TimeoutStopSec is not 15 s above the broker's stop timeout"; exit 1; }
grep -q '"executable": "/usr/local/libexec/windowbroker/notes"' "$P/share/windowbroker/apps/notes.json"
# systemd verifies units against the running system's paths: a second install, into a PREFIX
# inside the stage (no DESTDIR), gives units whose paths exist here, man pages included.
HINT=$(make --no-print-directory install PREFIX="$STAGE/prefix")
# Its units are not on systemd's search path: the closing hint links them first.
grep -qF "start it with: systemctl --user link $STAGE/prefix/share/systemd/user/windowbroker.socket" <<<"$HINT" \
  || { echo "the install's closing hint does not link units that are off systemd's search path:"; echo "$HINT"; exit 1; }
mkdir -m 0700 "$STAGE/run"
MAN_CHECK=(); command -v man >/dev/null || MAN_CHECK=(--man=no)  # man pages checked only where man exists
XDG_RUNTIME_DIR="$STAGE/run" MANPATH="$STAGE/prefix/share/man" systemd-analyze --user verify "${MAN_CHECK[@]}" \
  "$STAGE/prefix/share/systemd/user/windowbroker.socket" "$STAGE/prefix/share/systemd/user/windowbroker.service"
# A prefix that is not on XDG_DATA_DIRS: the broker finds the apps installed with it.
mkdir -m 0700 "$STAGE/run2"
env -i PATH=/usr/bin:/bin HOME="$STAGE/run2" XDG_RUNTIME_DIR="$STAGE/run2" XDG_STATE_HOME="$STAGE/run2/state" \
  "$STAGE/prefix/bin/windowbrokerd" >"$STAGE/run2/broker.log" 2>&1 &
BROKER2=$!
for _ in $(seq 100); do [ -S "$STAGE/run2/windowbroker/control.sock" ] && break; sleep 0.1; done
APPS=$(env -i "$STAGE/prefix/bin/wmctl" --socket "$STAGE/run2/windowbroker/control.sock" apps)
# The installed notes is its own zygote: its scenes are forked, not spawned.
for _ in $(seq 100); do
  env -i "$STAGE/prefix/bin/wmctl" --socket "$STAGE/run2/windowbroker/control.sock" apps | grep -q "^notes: zygote ready" && break
  sleep 0.1
done
OPENED=$(env -i "$STAGE/prefix/bin/wmctl" --socket "$STAGE/run2/windowbroker/control.sock" --json open notes --activity notes.edit --info noteID=installed)
kill $BROKER2; wait $BROKER2 2>/dev/null || true
grep -q '"launch" *: *"forked"' <<<"$OPENED" || { echo "the installed notes was not forked from its zygote:"; echo "$OPENED"; cat "$STAGE/run2/broker.log"; exit 1; }
grep -q "^notes " <<<"$APPS" || { echo "a broker in a prefix off XDG_DATA_DIRS does not find its own apps:"; echo "$APPS"; cat "$STAGE/run2/broker.log"; exit 1; }
grep -q "path=$STAGE/prefix/libexec/windowbroker/windowbroker-ui" "$STAGE/run2/broker.log" \
  || { echo "the installed broker does not find its system UI:"; cat "$STAGE/run2/broker.log"; exit 1; }
grep -q "path=$STAGE/prefix/libexec/windowbroker/libwindowbroker-drawing.so" "$STAGE/run2/broker.log" \
  || { echo "the installed broker does not find the drawing library:"; cat "$STAGE/run2/broker.log"; exit 1; }
rm -rf "$STAGE/run2"
make --no-print-directory uninstall PREFIX="$STAGE/prefix" >/dev/null
# No toolchain needed: no RUNPATH into it, no Swift runtime libraries from it, and they run with nothing set.
for b in "$P/bin/windowbrokerd" "$P/bin/wmctl" "$P/libexec/windowbroker/notes" "$P/libexec/windowbroker/windowbroker-ui"; do
  if readelf -d "$b" | grep -E 'RUNPATH|RPATH' | grep -q swift; then echo "$b has a RUNPATH into the toolchain"; exit 1; fi
  if ldd "$b" | grep -q '/opt/swift'; then echo "$b loads libraries from the toolchain"; ldd "$b"; exit 1; fi
done
# wmctl starts without the loader patching its pointers (Package.swift); the broker, which
# every peer talks to, keeps a randomised address.
readelf -h "$P/bin/wmctl" | grep -q 'Type: *EXEC' || { echo "the installed wmctl is not position-dependent"; readelf -h "$P/bin/wmctl"; exit 1; }
readelf -h "$P/bin/windowbrokerd" | grep -q 'Type: *DYN' || { echo "the installed broker is not PIE"; readelf -h "$P/bin/windowbrokerd"; exit 1; }
# The drawing library loads with nothing from the toolchain either (a scene dlopens it).
DRAWING=$P/libexec/windowbroker/libwindowbroker-drawing.so
if ldd "$DRAWING" | grep -q '/opt/swift\|not found'; then echo "the drawing library needs the toolchain"; ldd "$DRAWING"; exit 1; fi
# The table's symbol as the programs look it up (drawing_library.h), not a copy of its name.
TABLE=$(sed -n 's/^#define WB_DRAWING_TABLE_SYMBOL \([a-z0-9_]*\)$/\1/p' Sources/CSceneWindowLoader/include/drawing_library.h)
[ -n "$TABLE" ] || { echo "no WB_DRAWING_TABLE_SYMBOL in drawing_library.h"; exit 1; }
env -i /usr/bin/python3 -c 'import ctypes, sys; getattr(ctypes.CDLL(sys.argv[1]), sys.argv[2])' "$DRAWING" "$TABLE" \
  || { echo "the installed drawing library does not load, or has no $TABLE"; exit 1; }
env -i "$P/bin/wmctl" --version
env -i "$P/bin/windowbrokerd" --version
env -i "$P/bin/wmctl" --socket /nonexistent.sock status && exit 1 || true
# The installed pieces work together: the installed broker launches the installed Python
# scene app, the installed wmctl opens it, the installed Python client reads the broker.
RUN=$(mktemp -d /tmp/windowbroker-run.XXXXXX)
EX=$P/share/doc/windowbroker/examples/python
env -i PATH=/usr/bin:/bin HOME="$RUN" XDG_RUNTIME_DIR="$RUN" XDG_STATE_HOME="$RUN/state" \
  "$P/bin/windowbrokerd" --apps-dir "$EX/apps" >"$RUN/broker.log" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null || true; wait $BROKER 2>/dev/null || true; rm -rf "$STAGE" "$RUN"' EXIT
SOCK=$RUN/windowbroker/control.sock
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
env -i "$P/bin/wmctl" --socket "$SOCK" open tally
env -i PATH=/usr/bin:/bin HOME="$RUN" /usr/bin/python3 "$EX/wbclient.py" --socket "$SOCK" sessions | grep -q '"title":"Tally: 0"' \
  || { echo "the installed Python client does not see the installed Python scene"; cat "$RUN/broker.log"; exit 1; }
kill $BROKER; wait $BROKER 2>/dev/null || true
# An app in a package of its own (Examples/hello-scene, depending on this checkout's SceneWorker
# by path) builds, and the installed broker runs it: its action, its restoration, its print().
"${SWIFT:-swift}" build --package-path Examples/hello-scene >/dev/null
env -i PATH=/usr/bin:/bin HOME="$RUN" XDG_RUNTIME_DIR="$RUN" XDG_STATE_HOME="$RUN/state" \
  "$P/bin/windowbrokerd" --apps-dir Examples/hello-scene >"$RUN/hello.log" 2>&1 &
BROKER=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
HELLO=$(env -i "$P/bin/wmctl" --socket "$SOCK" --json open hello | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])')
env -i "$P/bin/wmctl" --socket "$SOCK" send "$HELLO" greet --arg name=Ada | grep -q '"hello, Ada (1 greeted)"'
env -i "$P/bin/wmctl" --socket "$SOCK" background "$HELLO" >/dev/null
env -i "$P/bin/wmctl" --socket "$SOCK" reclaim "$HELLO" >/dev/null
env -i "$P/bin/wmctl" --socket "$SOCK" activate "$HELLO" >/dev/null
env -i "$P/bin/wmctl" --socket "$SOCK" send "$HELLO" greet --arg name=Grace | grep -q '"hello, Grace (2 greeted)"' \
  || { echo "the separate package's app did not come back restored"; cat "$RUN/hello.log"; exit 1; }
env -i "$P/bin/wmctl" --socket "$SOCK" logs "$HELLO" | grep -q "hello-scene: greeted Grace" \
  || { echo "the app's print() did not reach wmctl logs"; cat "$RUN/hello.log"; exit 1; }
kill $BROKER; wait $BROKER 2>/dev/null || true
echo "sizes: $(du -h "$P/bin/windowbrokerd" "$P/bin/wmctl" "$P/libexec/windowbroker/notes" | awk '{print $2 ": " $1}' | xargs)"
make --no-print-directory uninstall DESTDIR="$STAGE" PREFIX=/usr/local >/dev/null
left=$(find "$STAGE" -mindepth 1 -path "$STAGE/run" -prune -o -print | sed "s|$STAGE||" | grep -v '^/usr$\|^/usr/local$\|^/prefix$' || true)
[ -z "$left" ] || { echo "left after uninstall (files or empty directories):"; echo "$left"; exit 1; }
echo "install check passed"
