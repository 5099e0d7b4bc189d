#!/usr/bin/env bash
# make load: LOAD_CLIENTS control clients (default 100) x LOAD_REQUESTS requests each (default
# 200) against a release broker with a few live scenes and LOAD_SESSIONS stored ones (default
# 500): errors, latency p50/p99, requests per second, the broker's RSS before and after. Then
# the same with 1,000 clients at once (more than the 128 request connections: the excess waits
# in the listen backlog until one leaves, and nobody gets an error), and with 1,000 watchers
# connected to a broker started under a soft limit of 1,024 descriptors. Last, on a fresh
# broker, the growth soaks: LOAD_RELAUNCHES relaunches of one session (background, reclaim,
# activate; default 1,000) and LOAD_OPENS open+close cycles (default 500), printing the
# broker's RSS at the start, halfway (relaunches) and the end (what a launch leaves behind adds up here).
# Measures; asserts that nothing failed in the first two runs (exit 1 when a request did).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release >/dev/null
BIN=$(swift build -c release --show-bin-path)
DIR=$(mktemp -d /tmp/windowbroker-load.XXXXXX)
BROKER=""
cleanup() { [ -n "$BROKER" ] && kill "$BROKER" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
mkdir -p "$DIR/apps" && cp apps/notes.json "$DIR/apps/"
start() {
  ( ulimit -Sn "${LOAD_NOFILE:-$(ulimit -Sn)}"; exec env -u WAYLAND_DISPLAY -u DISPLAY XDG_RUNTIME_DIR=$DIR/run NOTES_DATA_DIR=$DIR/notes XDG_CONFIG_HOME=$DIR/config \
    "$BIN/windowbrokerd" --apps-dir "$DIR/apps" --state-dir "$DIR/state" --runtime-dir "$DIR/run" --log-level error 2>"$DIR/broker.log" ) &
  BROKER=$!
  for _ in $(seq 100); do "$BIN/wmctl" --socket "$DIR/run/control.sock" status >/dev/null 2>&1 && break; sleep 0.1; done
}
start
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
python3 - "$DIR/state/state.sqlite" "${LOAD_SESSIONS:-500}" <<'PY'
import sqlite3, sys, time, uuid
db = sqlite3.connect(sys.argv[1]); now = time.time()
db.executemany("INSERT INTO session (id, appID, configuration, role, title, createdAt, lastActiveAt, launchCount) VALUES (?,?,?,?,?,?,?,1)",
    [(str(uuid.uuid4()).upper(), "archived", "Editor", "windowApplication", f"stored note {i}", now - i, now - i) for i in range(int(sys.argv[2]))])
db.commit()
PY
start
for i in $(seq 4); do "$BIN/wmctl" --socket "$DIR/run/control.sock" open notes --info "noteID=load$i" >/dev/null; done
"$BIN/wb-load" --socket "$DIR/run/control.sock" --clients "${LOAD_CLIENTS:-100}" --requests "${LOAD_REQUESTS:-200}"
echo "broker still serving: $("$BIN/wmctl" --socket "$DIR/run/control.sock" status)"
echo "--- 1,000 clients at once"
(ulimit -Sn 4096; "$BIN/wb-load" --socket "$DIR/run/control.sock" --clients 1000 --requests 20)
echo "--- 1,000 watchers, broker started with ulimit -Sn 1024"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
LOAD_NOFILE=1024 start
(ulimit -Sn 4096; "$BIN/wb-load" --socket "$DIR/run/control.sock" --clients 20 --requests 50 --watchers 1000) || true
echo "broker still serving: $("$BIN/wmctl" --socket "$DIR/run/control.sock" status)"
echo "--- growth: relaunches of one session, then opens and closes of new ones (RSS in KiB)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
start
W() { "$BIN/wmctl" --socket "$DIR/run/control.sock" "$@"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$BROKER/status"; }
# Opens a notes scene for the note named $1 and prints its session id.
open_note() { W open notes --info "noteID=$1" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["session"])'; }
SOAKED=$(open_note soak)
RELAUNCHES=${LOAD_RELAUNCHES:-1000}
BEFORE=$(rss)
for i in $(seq "$RELAUNCHES"); do
  W background "$SOAKED" >/dev/null; W reclaim "$SOAKED" >/dev/null; W activate "$SOAKED" >/dev/null
  if [ "$i" = $((RELAUNCHES / 2)) ]; then HALFWAY=$(rss); fi
done
echo "relaunches: $RELAUNCHES, RSS $BEFORE at the start, ${HALFWAY:-?} halfway, $(rss) at the end"
BEFORE=$(rss)
for i in $(seq "${LOAD_OPENS:-500}"); do
  W close "$(open_note "cycle$i")" >/dev/null
done
echo "open+close cycles: ${LOAD_OPENS:-500}, RSS $BEFORE at the start, $(rss) at the end"
