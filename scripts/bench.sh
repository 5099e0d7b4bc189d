#!/usr/bin/env bash
# Prints figures; asserts nothing. Release build, private directories, everything stopped at the end.
#   control round trips (wmctl ping, one connection)
#   cold open: broker-side time from `created` to `didBecomeActive` (from watch events) and the
#              wall time of `wmctl open` (including wmctl's own start)
#   reclaim + restore: time of `wmctl reclaim` and of `wmctl activate` on a reclaimed scene
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_SCENES:-20}
swift build -c release >/dev/null
BIN=$(swift build -c release --show-bin-path)
DIR=$(mktemp -d /tmp/windowbroker-bench.XXXXXX)
export XDG_RUNTIME_DIR=$DIR/run XDG_STATE_HOME=$DIR/state NOTES_DATA_DIR=$DIR/notes
export WINDOWBROKER_SOCKET=$XDG_RUNTIME_DIR/windowbroker/control.sock
BROKER=""; WATCH=""
cleanup() {
  [ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null || true
  [ -n "$BROKER" ] && kill "$BROKER" 2>/dev/null && wait "$BROKER" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
"$BIN/windowbrokerd" --apps-dir apps --max-foreground 2 --log-level warning 2>"$DIR/broker.log" &
BROKER=$!
for _ in $(seq 100); do "$BIN/wmctl" status >/dev/null 2>&1 && break; sleep 0.1; done

echo "== control round trips (release, one connection)"
"$BIN/wmctl" ping --count 2000

"$BIN/wmctl" --json watch > "$DIR/events.jsonl" &
WATCH=$!
sleep 0.3
now_ms() { date +%s%3N; }
: > "$DIR/open.txt"; : > "$DIR/reclaim.txt"; : > "$DIR/activate.txt"
for i in $(seq "$N"); do
  t0=$(now_ms)
  s=$("$BIN/wmctl" --json open notes --activity notes.edit --info "noteID=n$i" | python3 -c "import json,sys;print(json.load(sys.stdin)['session'])")
  echo $(( $(now_ms) - t0 )) >> "$DIR/open.txt"
  "$BIN/wmctl" send "$s" type --arg "text=note $i" >/dev/null
  "$BIN/wmctl" background "$s" >/dev/null
  t0=$(now_ms); "$BIN/wmctl" reclaim "$s" >/dev/null; echo $(( $(now_ms) - t0 )) >> "$DIR/reclaim.txt"
  t0=$(now_ms); "$BIN/wmctl" activate "$s" >/dev/null; echo $(( $(now_ms) - t0 )) >> "$DIR/activate.txt"
done
sleep 0.3
kill "$WATCH"; WATCH=""

python3 - "$DIR" "$N" <<'PY'
import json, sys, statistics
d, n = sys.argv[1], int(sys.argv[2])
def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, max(0, int(round(p * len(xs) + 0.5)) - 1))]
def show(name, xs, unit="ms"):
    print(f"{name:<58} n={len(xs):<3} p50 {pct(xs, .5):7.1f} {unit}  p99 {pct(xs, .99):7.1f} {unit}  min {min(xs):7.1f}  max {max(xs):7.1f}")
created, cold = {}, []
for line in open(f"{d}/events.jsonl"):
    e = json.loads(line)
    from datetime import datetime
    t = datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
    s = e["session"]
    if e["event"] == "created": created[s] = t
    if e["event"] == "didBecomeActive" and s in created:
        cold.append((t - created.pop(s)) * 1000)
print("== cold open and restore")
def read(f): return [float(x) for x in open(f"{d}/{f}") if x.strip()]
show("cold open, broker side: created -> didBecomeActive", cold)
show("wmctl open, new scene (wall, incl. wmctl start)", read("open.txt"))
show("wmctl reclaim (save, commit, didDisconnect, exit)", read("reclaim.txt"))
show("wmctl activate, reclaimed scene (spawn + restore)", read("activate.txt"))
PY
"$BIN/wmctl" status
