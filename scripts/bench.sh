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

# ---------------------------------------------------------------- reclaim under pressure
# Time from the pressure signal (`wmctl pressure simulate critical`) to every background
# scene's process gone, for 1, 10 and 50 scenes of 8 MiB each; with the save step (fresh
# restoration activity, committed) and without it (kill only, what systemd-oomd/earlyoom do).
echo
echo "== reclaim: signal -> all background processes exited (release, sequential reclaim)"
reclaim_run() {  # $1 = scenes, $2 = save|skip
  local n=$1 mode=$2 dir
  dir=$(mktemp -d "$DIR/reclaim.XXXXXX")
  XDG_RUNTIME_DIR=$dir/run XDG_STATE_HOME=$dir/state NOTES_DATA_DIR=$dir/notes \
    "$BIN/windowbrokerd" --apps-dir apps --max-workers 64 --log-level warning 2>"$dir/log" &
  local broker=$!
  local sock=$dir/run/windowbroker/control.sock
  for _ in $(seq 100); do "$BIN/wmctl" --socket "$sock" status >/dev/null 2>&1 && break; sleep 0.1; done
  for i in $(seq "$n"); do
    s=$("$BIN/wmctl" --socket "$sock" --json open notes --activity notes.edit --info "noteID=r$i" | python3 -c "import json,sys;print(json.load(sys.stdin)['session'])")
    "$BIN/wmctl" --socket "$sock" send "$s" allocate --arg megabytes=8 >/dev/null
    "$BIN/wmctl" --socket "$sock" background "$s" >/dev/null
  done
  sleep 1.5  # let the broker sample every worker's PSS after its allocation
  local flag=""; [ "$mode" = skip ] && flag="--skip-save"
  local t0; t0=$(date +%s%N)
  "$BIN/wmctl" --socket "$sock" --json pressure simulate critical $flag > "$dir/reply.json"
  local wall=$(( ($(date +%s%N) - t0) / 1000000 ))
  python3 - "$dir/reply.json" "$n" "$mode" "$wall" <<'PY'
import json, sys
reply, n, mode, wall = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
r = reply["reclaimed"]
total = sum(x["seconds"] for x in r) * 1000
freed = sum(x["freedBytes"] for x in r) / 1048576
print(f"{n:>3} scenes, {'with save   ' if mode == 'save' else 'kill only   '} reclaimed {len(r):>3}  broker {total:8.1f} ms  "
      f"({total / max(1, len(r)):6.1f} ms/scene)  wall incl. wmctl {wall:5d} ms  freed {freed:7.1f} MiB")
with open(sys.argv[1] + ".total", "w") as f: f.write(str(total))
PY
  cp "$dir/reply.json.total" "$DIR/total-$n-$mode"
  kill "$broker"; wait "$broker" 2>/dev/null || true
}
for n in 1 10 50; do
  reclaim_run "$n" skip
  reclaim_run "$n" save
  python3 -c "import sys; s=float(open('$DIR/total-$n-save').read()); k=float(open('$DIR/total-$n-skip').read()); print(f'    cost of saving state at {$n} scenes: {s/k if k else float(\"nan\"):.2f}x the kill-only time')"
done
