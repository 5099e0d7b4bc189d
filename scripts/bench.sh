#!/usr/bin/env bash
# make bench: prints figures, each beside a baseline measured in the same run on the same
# machine, and their ratio; asserts nothing. Release build, private directories, everything it
# starts is stopped at the end.
#
#   control round trip  wmctl ping p50        vs a framed round trip over a raw Unix socket (C)
#                                              and an sd-bus method call through a private dbus-daemon;
#                       the same ping from a C client (bench/control_ping.c): the broker's share,
#                       also held on one CPU beside the stack's floor's server from that client;
#                       wmctl ping with wmctl and the broker held on one CPU, then on two CPUs
#                       (taskset), each beside the raw round trip and the stack's floor held the
#                       same way: left alone the scheduler places a pair on one CPU or on two,
#                       run by run
#   cold open           created -> didBecomeActive (broker side, from watch events), release build
#                       (spawned: a shared Swift runtime cannot be a zygote) and installed form
#                       (static stdlib), forked from the app's zygote and spawned; installed and
#                       forked also from the moment the open request is written (`created` marks
#                       the start of the session's turn, after the request's routing and focus)
#                                              vs spawn-to-first-byte of a minimal Foundation binary,
#                                                 static stdlib (the installed form) and dynamic
#   prewarmed open      the same, bound from the app's pool      vs the cold open, and vs one page
#                       written and synced (bench/commit_sync.c): each acknowledged commit waits for one;
#                       installed also from the request, to didBecomeActive and to the open's answer,
#                       and that against the stack's floor relaying the same exchanges
#   open -> first frame open request to the window's first frame on a headless sway, cold and
#                       prewarmed (release build; installed: forked and spawned)
#                                                     vs spawning the smallest GTK 4 program that maps
#                                                     the same window (bench/first_gtk_window.c), and
#                                                     that against a bare C client (wl_shm; with pango text)
#   scene memory        an idle editor's private pages  vs the same GTK 4 program's
#   reactivation        a reclaimed editor activated again: request -> the placeholder's first
#                       frame (its picture)           vs a cold open's first frame, same rounds;
#                       the PSS of everything the broker runs given back by a reclaim
#                                                     vs the scene's PSS before it (goal 90 %)
#                                                     and vs its private pages
#   switcher            wmctl switcher to its first frame on screen, 50 sessions with pictures,
#                       10 shows a second apart
#                                                     vs open -> first frame, cold
#   snapshot            background with a display (activity + picture) vs headless (activity only);
#                       picture bytes per session  vs restoration activity bytes;
#                       the thumbnail beside it     vs the picture
#   reclaim             10 background scenes, save + stop         vs kill only (1 and 50 printed too)
#   update fan-out      post --wait to 10 and 100 connected scenes: time until the last scene
#                       acknowledged (broker side), p50 and p99  vs C: one process writes a frame
#                       to 10 (100) processes and reads their acknowledgements (bench/fanout.c);
#                       release build, then installed (scenes forked from the app's zygote);
#                       each with a wmctl per post and back to back over one connection
#                       (bench/post_rounds.py), as the C and stack-floor fan-outs run their rounds;
#                       a wmctl per post also vs the C fan-out and the stack's floor paused before
#                       each round as long as the wmctl loop paused between two posts
#   broker at rest      its CPU per second with the 100 scenes live and idle (the memory monitor
#                       samples every second)   vs reading the 100 scenes' smaps_rollup once
#   search              wmctl search p50/p99 over 10,000 indexed sessions (a common word, a rare
#                       word, a prefix)               vs wmctl ping (the same round trip, no work);
#                       index size per session
#   broker memory       the installed broker's RSS (and what it allocated) with no sessions, with 900
#                       stored ones (with activities), and with 100 live workers besides: per 1,000 stored
#   whole command       installed wmctl --version and wmctl status, spawn to exit
#                                                     vs systemctl --version
#   the stack's floor   stack-floor (Sources/stack-floor): the ping, the fan-out, a worker's
#                       first frame and a prewarmed open's relay (the open to a middle process,
#                       a connect command to a ready scene process, its answer, the reply) done
#                       by NIO and swift-protobuf alone, with our schema and nothing else of
#                       ours, linked as installed; beside the C baseline and beside our figure,
#                       so each ratio splits into the stack's share and ours; the relay also
#                       paced as the opens are (50 ms between rounds), which is what a prewarmed
#                       open is compared with
#   footprint           installed binaries (static stdlib, stripped)   vs systemctl's size
#                       and the stack's floor binary;
#                       an idle notes worker's private dirty memory (installed form, forked)
#                                              vs an idle program that links all of Foundation,
#                                                 the smallest Foundation program linked as installed
#                                                 (spawn-probe --idle), and the same worker spawned (PSS too);
#                       the app's zygote's own private dirty memory (one per app)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh bench
N=${BENCH_SCENES:-20}
# Only what the benchmark runs: a plain `swift build -c release` also builds swift-protobuf's
# protoc from C++ (10 minutes on two cores) for nothing.
for product in windowbrokerd wmctl notes scene-probe windowbroker-ui spawn-probe windowbroker-drawing; do
  swift build -c release --product "$product" >/dev/null
done
BIN=$(swift build -c release --show-bin-path)
DIR=$(mktemp -d /tmp/windowbroker-bench.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
FIG=$DIR/figures.tsv   # name, value, unit, baseline name, baseline value
: > "$FIG"
fig() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$FIG"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
kib_as_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
ms() { awk -v us="$1" -v format="${2:-%.1f}" 'BEGIN { printf format, us / 1000 }'; }  # $2: the format (default one decimal)

# ---------------------------------------------------------------- baselines, built here
mkdir -p "$DIR/bin"
cc -O2 -o "$DIR/bin/pingpong" bench/pingpong.c
cc -O2 -o "$DIR/bin/spawn_first_byte" bench/spawn_first_byte.c
cc -O2 -o "$DIR/bin/spawn_exit" bench/spawn_exit.c
cc -O2 -o "$DIR/bin/control_ping" bench/control_ping.c
cc -O2 -o "$DIR/bin/fanout" bench/fanout.c
cc -O2 -o "$DIR/bin/commit_sync" bench/commit_sync.c
cc -O2 -o "$DIR/bin/sdbus_echo" bench/sdbus_echo.c $(pkg-config --cflags --libs libsystemd)
RAW=$("$DIR/bin/pingpong" 5000)
# The same round trip with its two processes held on one CPU, then on two: left alone, the
# scheduler sometimes keeps them together and sometimes not, and a wake-up across CPUs costs
# an interprocessor interrupt (slow on a VM). The pinned pairs compare like with like.
RAW_ONE_CPU=$(taskset -c 0 "$DIR/bin/pingpong" 5000)
RAW_TWO_CPUS=""
[ "$(nproc)" -ge 2 ] && RAW_TWO_CPUS=$("$DIR/bin/pingpong" 5000 0 1)
# What the store's every acknowledged commit waits for, on the file system the bench's brokers
# keep their stores on.
COMMIT_SYNC=$("$DIR/bin/commit_sync" "$DIR" 200)
dbus-daemon --session --address="unix:path=$DIR/bus" --nofork --nopidfile 2>/dev/null &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$DIR/bus" ] && break; sleep 0.1; done
"$DIR/bin/sdbus_echo" server "unix:path=$DIR/bus" > "$DIR/sdbus.ready" &
PIDS+=($!)
for _ in $(seq 50); do grep -q ready "$DIR/sdbus.ready" 2>/dev/null && break; sleep 0.1; done
DBUS=$("$DIR/bin/sdbus_echo" client "unix:path=$DIR/bus" 5000)
SPAWN=$("$DIR/bin/spawn_first_byte" 40 "$BIN/spawn-probe")
# The installed form (static stdlib, as scripts/install.sh builds it), for the same figures.
source scripts/release-flags.sh
for product in windowbrokerd wmctl notes windowbroker-ui spawn-probe stack-floor; do
  swift build "${RELEASE_BUILD[@]}" --product "$product" >/dev/null
done
SBIN=$(swift build "${RELEASE_BUILD[@]}" --show-bin-path)
bash scripts/build-drawing.sh "$SBIN"  # as make install builds it
SPAWN_STATIC=$("$DIR/bin/spawn_first_byte" 40 "$SBIN/spawn-probe")
WORKER_HELLO_STATIC=$(WINDOWBROKER_FD=3 WINDOWBROKER_APP=notes "$DIR/bin/spawn_first_byte" 40 "$SBIN/notes" 2>/dev/null)
FANOUT10_C=$("$DIR/bin/fanout" 10 200)
FANOUT100_C=$("$DIR/bin/fanout" 100 200)
# The same baselines done by our stack alone (NIO, swift-protobuf, the schema; one event loop
# per process), linked as installed.
FLOOR_HELLO=$("$DIR/bin/spawn_first_byte" 40 "$SBIN/stack-floor" hello)
FLOOR_PING=$("$SBIN/stack-floor" ping 5000)
# Held alike, as the raw pair: both sides on one CPU, then the server on the other one.
FLOOR_PING_ONE_CPU=$(taskset -c 0 "$SBIN/stack-floor" ping 5000)
[ -n "$RAW_TWO_CPUS" ] && FLOOR_PING_TWO_CPUS=$(STACK_FLOOR_SERVE_CPU=1 taskset -c 0 "$SBIN/stack-floor" ping 5000)
# The floor's server on a socket path, answered from the C control client held on the same
# CPU: the side of a ping the broker's share is set beside.
taskset -c 0 "$SBIN/stack-floor" listen "$DIR/floor.sock" &
FLOOR_SERVER=$!
PIDS+=("$FLOOR_SERVER")
for _ in $(seq 50); do [ -S "$DIR/floor.sock" ] && break; sleep 0.05; done
FLOOR_SERVER_ONE_CPU=$(taskset -c 0 "$DIR/bin/control_ping" "$DIR/floor.sock" 5000)
kill "$FLOOR_SERVER"; wait "$FLOOR_SERVER" 2>/dev/null || true
FLOOR_FAN10=$("$SBIN/stack-floor" fan 10 200)
FLOOR_FAN100=$("$SBIN/stack-floor" fan 100 200)
# A prewarmed open's exchanges by the floor: the open to a middle process, its connect command
# to a ready scene process, the scene's answer and the open's reply (ms). Its cold open would
# add the scene's start: spawn to a Hello frame.
FLOOR_RELAY=$("$SBIN/stack-floor" relay 2000 | awk '{printf "%.3f", $1 / 1000}')
FLOOR_COLD_RELAY=$(awk -v h="$FLOOR_HELLO" -v r="$FLOOR_RELAY" 'BEGIN { printf "%.3f", h + r }')
# The same relay with 50 ms between rounds, as bench/open_from_request.py paces its opens: each
# then comes to processes that have gone to sleep (and on a VM, to CPUs the host halted), as a
# user's open does, where back to back they stay awake and hot.
FLOOR_RELAY_PAUSED=$("$SBIN/stack-floor" relay 100 --pause 50 | awk '{printf "%.3f", $1 / 1000}')
FLOOR_COLD_RELAY_PAUSED=$(awk -v h="$FLOOR_HELLO" -v r="$FLOOR_RELAY_PAUSED" 'BEGIN { printf "%.3f", h + r }')
# The reference worker on its own: spawn until its Hello (its first byte), no broker involved.
# Cold open minus this is what the broker adds (spawn call, handshake, three lifecycle steps).
WORKER_HELLO=$(WINDOWBROKER_FD=3 WINDOWBROKER_APP=notes "$DIR/bin/spawn_first_byte" 40 "$BIN/notes" 2>/dev/null)

# ---------------------------------------------------------------- a broker: ping, cold and prewarmed opens
start_broker() {  # $1 = dir; remaining: extra flags. Sets BROKER and SOCK.
  local dir=$1; shift
  mkdir -p "$dir/apps"
  # NO_ZYGOTE=1: the notes apps without their zygote (every worker spawned).
  NO_ZYGOTE=${NO_ZYGOTE:-0} NO_POOL=${NO_POOL:-0} python3 - "$dir/apps" <<'PY'
import json, os, sys
def notes():
    m = json.load(open("apps/notes.json"))
    if os.environ["NO_ZYGOTE"] == "1": m.pop("zygote", None)
    return m
json.dump(notes(), open(sys.argv[1] + "/notes.json", "w"))
# NO_POOL=1: no app with a prewarmed process (one idle GTK process shares the scenes' pages).
if os.environ.get("NO_POOL") != "1":
    m = notes(); m["id"] = "warm"; m["prewarm"] = 1
    json.dump(m, open(sys.argv[1] + "/warm.json", "w"))
# notes run by the tests' probe, for what only the probe does (allocate).
probe = json.load(open("Sources/scene-probe/actions.json"))
m = json.load(open("apps/notes.json")); m["id"] = "probe"; m["executable"] = probe["executable"]; m["actions"] += probe["actions"]
json.dump(m, open(sys.argv[1] + "/probe.json", "w"))
PY
  DBUS_SESSION_BUS_ADDRESS=unix:path=$DIR/bus XDG_RUNTIME_DIR=$dir/run XDG_STATE_HOME=$dir/state NOTES_DATA_DIR=$dir/notes \
    ${BROKER_PREFIX:-} "${BROKER_BIN:-$BIN}/windowbrokerd" --apps-dir "$dir/apps" --state-dir "$dir/state" --runtime-dir "$dir/run" \
    --log-level warning "$@" 2>"$dir/broker.log" &
  BROKER=$!
  PIDS+=("$BROKER")
  SOCK=$dir/run/control.sock
  for _ in $(seq 100); do "$BIN/wmctl" --socket "$SOCK" status >/dev/null 2>&1 && break; sleep 0.1; done
}
W() { "$BIN/wmctl" --socket "$SOCK" "$@"; }
# What only observes runs at idle priority (SCHED_IDLE), so that it never takes a CPU from
# what it measures; nice 19 where chrt is missing.
if command -v chrt >/dev/null; then IDLE_PRIORITY=(chrt -i 0); else IDLE_PRIORITY=(nice -n 19); fi

start_broker "$DIR/main" --max-workers 128
PING=$(W --json ping --count 5000 | json 'd["p50Micros"]')
# The same round trip from a C client: what the broker itself costs, without wmctl's side.
CPING=$("$DIR/bin/control_ping" "$SOCK" 5000)
# The broker's D-Bus face, from the same sd-bus client as the baseline: a property read (served
# on the bus thread) and a method (a control request answered by the broker).
BUSSESSION=$(W --json open notes --activity notes.edit --info noteID=bus | json 'd["session"]')
BUSPATH=/org/windowbroker/Broker1/session/${BUSSESSION//-/_}
BUSSTATE=$("$DIR/bin/sdbus_echo" state "unix:path=$DIR/bus" 2000 "$BUSPATH")
BUSACTIVATE=$("$DIR/bin/sdbus_echo" activate "unix:path=$DIR/bus" 1000 "$BUSPATH")
W close "$BUSSESSION" >/dev/null
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
# The same ping with the broker and wmctl held on one CPU: the raw baseline's two processes
# stay on one CPU on their own; wmctl's event loop and the broker's usually do not, and each
# wake-up of a thread on the other CPU is an interprocessor interrupt (slow on a VM).
BROKER_PREFIX="taskset -c 0" start_broker "$DIR/onecpu"
PING_ONE_CPU=$(taskset -c 0 "$BIN/wmctl" --socket "$SOCK" --json ping --count 5000 | json 'd["p50Micros"]')
CPING_ONE_CPU=$(taskset -c 0 "$DIR/bin/control_ping" "$SOCK" 5000)
# And wmctl on the other CPU, every wake-up across CPUs, as the raw pair held on two.
[ -n "$RAW_TWO_CPUS" ] && PING_TWO_CPUS=$(taskset -c 1 "$BIN/wmctl" --socket "$SOCK" --json ping --count 5000 | json 'd["p50Micros"]')
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
start_broker "$DIR/main" --max-workers 128

open_times() {  # $1 = tag; N cold opens, then N from the prewarmed pool; prints the p50s in ms
  local tag=$1 watch
  # At normal priority, woken by `created`, this watcher took the broker's CPU from its event
  # loop (perf sched) and lengthened the very opens it timed (prewarmed, created ->
  # didBecomeActive 1.41-1.53 against 1.08-1.25 ms); the timestamps it prints are the broker's.
  "${IDLE_PRIORITY[@]}" "$BIN/wmctl" --socket "$SOCK" --json watch --event created --event didBecomeActive > "$DIR/events.$tag.jsonl" &
  # Stopped below; it ends with the broker too (this runs in a subshell: PIDS would not keep it).
  watch=$!
  sleep 0.3
  for i in $(seq "$N"); do
    W --json open notes --activity notes.edit --info "noteID=cold$tag$i" | json 'd["session"]' >> "$DIR/cold.$tag.ids"
  done
  for i in $(seq "$N"); do
    for _ in $(seq 200); do [ "$(W --json status | json 'd["prewarmed"].get("warm", 0)')" = 1 ] && break; sleep 0.05; done
    W --json open warm --activity notes.edit --info "noteID=warm$tag$i" > "$DIR/warm.$i.json"
    json 'd["session"]' < "$DIR/warm.$i.json" >> "$DIR/warm.$tag.ids"
    json 'd["launch"]' < "$DIR/warm.$i.json" >> "$DIR/warm.launch"
  done
  sleep 0.3
  kill "$watch" 2>/dev/null || true
  python3 - "$DIR" "$tag" <<'PY'
import json, sys
d, tag = sys.argv[1], sys.argv[2]
def p50(xs): xs = sorted(xs); return xs[len(xs) // 2] if xs else float("nan")
created, took = {}, {}
for line in open(f"{d}/events.{tag}.jsonl"):
    e = json.loads(line)
    t = e["timestamp"]
    if e["event"] == "created": created[e["session"]] = t
    elif e["event"] == "didBecomeActive" and e["session"] in created:
        took.setdefault(e["session"], (t - created[e["session"]]) * 1000)
def ids(name): return [l.strip() for l in open(f"{d}/{name}") if l.strip()]
cold = [took[s] for s in ids(f"cold.{tag}.ids") if s in took]
warm = [took[s] for s in ids(f"warm.{tag}.ids") if s in took]
print(f"{p50(cold):.2f} {p50(warm):.2f}")
PY
}
read -r COLD PREWARMED <<<"$(open_times release)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
# The same opens with the installed broker and notes (static stdlib): what a user's machine runs.
# The release build above cannot be a zygote (shared Swift runtime): its workers are spawned.
# Installed, notes' workers are forked from its zygote; the same opens with them spawned too.
NO_ZYGOTE=1 BROKER_BIN=$SBIN start_broker "$DIR/spawned"
read -r COLD_SPAWNED_STATIC _ <<<"$(open_times spawned)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
# Room for its 80 opens: 20 cold and 20 prewarmed, then each again timed from the request.
BROKER_BIN=$SBIN start_broker "$DIR/installed" --max-workers 128
read -r COLD_STATIC PREWARMED_STATIC <<<"$(open_times installed)"
# The same cold opens timed from the moment the request is written: `created` comes when the
# session's turn starts, after the request is read, routed and its focus decided, so the
# broker-side figure alone leaves that part of what the user waits for out.
read -r COLD_REQUEST_STATIC COLD_CREATED_STATIC COLD_ANSWER_STATIC <<<"$(/usr/bin/python3 bench/open_from_request.py "$SOCK" notes "$N" request)"
# And the prewarmed opens timed alike, to didBecomeActive and to the open's answer.
read -r WARM_REQUEST_STATIC _ WARM_ANSWER_STATIC <<<"$(/usr/bin/python3 bench/open_from_request.py "$SOCK" warm "$N" warmrequest --prewarmed)"
# A command as a shell runs it, spawn to exit: what typing one costs before its answer shows.
SYSTEMCTL_VERSION=$("$DIR/bin/spawn_exit" 100 "$(command -v systemctl)" --version)
WMCTL_VERSION=$("$DIR/bin/spawn_exit" 100 "$SBIN/wmctl" --version)
WMCTL_STATUS=$("$DIR/bin/spawn_exit" 100 "$SBIN/wmctl" --socket "$SOCK" status)
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
WARM_LAUNCHES=$(sort "$DIR/warm.launch" | uniq -c | tr -s ' ' | tr '\n' ';')

fig "wmctl ping p50" "$PING" "µs" "raw Unix-socket round trip" "$RAW"
fig "wmctl ping p50" "$PING" "µs" "sd-bus call via dbus-daemon" "$DBUS"
fig "  broker's share: ping from a C client p50" "$CPING" "µs" "raw Unix-socket round trip" "$RAW"
fig "  wmctl and broker held on one CPU, p50" "$PING_ONE_CPU" "µs" "raw round trip held on one CPU" "$RAW_ONE_CPU"
[ -n "$RAW_TWO_CPUS" ] && fig "  wmctl and broker held on two CPUs, p50" "$PING_TWO_CPUS" "µs" "raw round trip held on two CPUs" "$RAW_TWO_CPUS"
fig "the stack's floor: the ping over NIO + protobuf" "$FLOOR_PING" "µs" "raw Unix-socket round trip" "$RAW"
fig "wmctl ping p50" "$PING" "µs" "the stack's floor: the same ping" "$FLOOR_PING"
fig "  the floor's ping held on one CPU" "$FLOOR_PING_ONE_CPU" "µs" "raw round trip held on one CPU" "$RAW_ONE_CPU"
fig "  wmctl ping held on one CPU" "$PING_ONE_CPU" "µs" "the floor's ping held on one CPU" "$FLOOR_PING_ONE_CPU"
if [ -n "$RAW_TWO_CPUS" ]; then
  fig "  the floor's ping held on two CPUs" "$FLOOR_PING_TWO_CPUS" "µs" "raw round trip held on two CPUs" "$RAW_TWO_CPUS"
  fig "  wmctl ping held on two CPUs" "$PING_TWO_CPUS" "µs" "the floor's ping held on two CPUs" "$FLOOR_PING_TWO_CPUS"
fi
fig "  the floor's server from the C client, one CPU" "$FLOOR_SERVER_ONE_CPU" "µs" "raw round trip held on one CPU" "$RAW_ONE_CPU"
fig "  the broker from the C client, one CPU" "$CPING_ONE_CPU" "µs" "the floor's server, the same client" "$FLOOR_SERVER_ONE_CPU"
fig "D-Bus: a session's State property p50" "$BUSSTATE" "µs" "sd-bus call via dbus-daemon" "$DBUS"
fig "D-Bus: Session1.Activate p50 (scene in front)" "$BUSACTIVATE" "µs" "sd-bus call via dbus-daemon" "$DBUS"
fig "cold open p50 (broker side)" "$COLD" "ms" "spawn to first byte, Foundation binary" "$SPAWN"
fig "  of which: notes binary, spawn to Hello" "$WORKER_HELLO" "ms" "spawn to first byte, Foundation binary" "$SPAWN"
fig "cold open p50 (broker side)" "$COLD" "ms" "notes binary, spawn to Hello" "$WORKER_HELLO"
fig "prewarmed open p50 (broker side)" "$PREWARMED" "ms" "cold open p50" "$COLD"
fig "installed: cold open p50, forked (zygote)" "$COLD_STATIC" "ms" "spawn to first byte, static Foundation binary" "$SPAWN_STATIC"
fig "installed: cold open p50, forked, from the request" "$COLD_REQUEST_STATIC" "ms" "spawn to first byte, static Foundation binary" "$SPAWN_STATIC"
fig "  the same opens, broker side (from created)" "$COLD_CREATED_STATIC" "ms" "installed: cold open, forked, from the request" "$COLD_REQUEST_STATIC"
fig "installed: cold open p50, spawned" "$COLD_SPAWNED_STATIC" "ms" "spawn to first byte, static Foundation binary" "$SPAWN_STATIC"
fig "  of which: installed notes, spawn to Hello" "$WORKER_HELLO_STATIC" "ms" "spawn to first byte, static Foundation binary" "$SPAWN_STATIC"
fig "the stack's floor: spawn to a Hello frame" "$FLOOR_HELLO" "ms" "spawn to first byte, static Foundation binary" "$SPAWN_STATIC"
fig "  installed notes, spawn to Hello" "$WORKER_HELLO_STATIC" "ms" "the stack's floor: spawn to a Hello frame" "$FLOOR_HELLO"
fig "installed: cold open p50, forked, from the request" "$COLD_REQUEST_STATIC" "ms" "the stack's floor: spawn to a Hello frame" "$FLOOR_HELLO"
fig "installed: prewarmed open p50 (broker side)" "$PREWARMED_STATIC" "ms" "installed: cold open p50, forked" "$COLD_STATIC"
fig "  the same" "$PREWARMED_STATIC" "ms" "a page written and synced (fdatasync)" "$COMMIT_SYNC"
fig "installed: prewarmed open p50, from the request" "$WARM_REQUEST_STATIC" "ms" "installed: cold open p50, forked, from the request" "$COLD_REQUEST_STATIC"
fig "  the same" "$WARM_REQUEST_STATIC" "ms" "the stack's floor: that relay, 50 ms after the last" "$FLOOR_RELAY_PAUSED"
fig "the stack's floor: that relay, 50 ms after the last" "$FLOOR_RELAY_PAUSED" "ms" "the floor's spawn to a Hello, then the same relay" "$FLOOR_COLD_RELAY_PAUSED"
fig "the stack's floor: an open relayed to a ready process, back to back" "$FLOOR_RELAY" "ms" "the floor's spawn to a Hello, then the same relay" "$FLOOR_COLD_RELAY"
fig "  from the request to the open's answer" "$WARM_ANSWER_STATIC" "ms" "the cold forked opens' answer" "$COLD_ANSWER_STATIC"
fig "  the same" "$WARM_ANSWER_STATIC" "ms" "a page written and synced (fdatasync)" "$COMMIT_SYNC"
fig "installed wmctl --version, spawn to exit p50" "$WMCTL_VERSION" "ms" "systemctl --version" "$SYSTEMCTL_VERSION"
fig "installed wmctl status, spawn to exit p50" "$WMCTL_STATUS" "ms" "systemctl --version" "$SYSTEMCTL_VERSION"

# ---------------------------------------------------------------- open -> first frame, on a headless sway
# From the open request to the compositor mapping the scene's window (its first committed
# buffer): what a user waits for. The limit: spawning a minimal C client that maps one window.
source scripts/headless-sway.sh
start_headless_sway "$DIR/sway" "$DIR/sway.log"
PIDS+=("$SWAY_PID")
[ -n "$KEYBOARD_PID" ] && PIDS+=("$KEYBOARD_PID")
# No GPU here: GTK's GL renderer would run on the CPU (Mesa's llvmpipe). The scenes and the GTK
# baseline draw with the same one.
export GSK_RENDERER=cairo
# shellcheck disable=SC2046  # pkg-config's flags are words
cc -O2 -o "$DIR/bin/first_gtk_window" bench/first_gtk_window.c $(pkg-config --cflags --libs gtk4)
cc -O2 -o "$DIR/bin/first_window" bench/first_window.c Sources/CSceneWindow/xdg-shell-protocol.c -I Sources/CSceneWindow -lwayland-client
# shellcheck disable=SC2046  # pkg-config's flags are words
cc -O2 -DWITH_TEXT -o "$DIR/bin/first_window_text" bench/first_window.c Sources/CSceneWindow/xdg-shell-protocol.c -I Sources/CSceneWindow \
  $(pkg-config --cflags --libs wayland-client pangocairo)
# first_frame.py against the broker started last (its socket is $SOCK).
first_frames() { /usr/bin/python3 bench/first_frame.py "$SWAYSOCK" "$SOCK" "$DIR/bin/first_window" "$DIR/bin/first_window_text" "$DIR/bin/first_gtk_window" "$N"; }
start_broker "$DIR/frames"
read -r FRAME_COLD FRAME_WARM FRAME_LIMIT FRAME_TEXT_LIMIT FRAME_GTK_LIMIT SCENE_PRIVATE GTK_PRIVATE <<<"$(first_frames)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
# Installed: notes forked from its zygote, which loaded the drawing library and the fonts
# before it forked; and the same, spawned.
BROKER_BIN=$SBIN start_broker "$DIR/frames-installed"
read -r FRAME_COLD_STATIC FRAME_WARM_STATIC _ _ _ SCENE_PRIVATE_STATIC _ <<<"$(first_frames)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
NO_ZYGOTE=1 BROKER_BIN=$SBIN start_broker "$DIR/frames-spawned"
read -r FRAME_COLD_SPAWNED_STATIC _ _ _ _ _ _ <<<"$(first_frames)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true

# ---------------------------------------------------------------- reclaim and reactivate, on the headless sway
# A notes editor opened, sent to the background (its picture kept), reclaimed and activated
# again: the reactivated window's first frame is the placeholder (that picture), set beside a
# cold open's first frame in the same rounds; around the reclaim, the PSS of everything the
# broker runs, so what the reclaim gave back is set beside the scene's own PSS. No prewarm pool:
# its idle process would keep the scene's shared pages mapped and count them as not given back.
reactivations() { /usr/bin/python3 bench/reactivate_frame.py "$SWAYSOCK" "$SOCK" "$BROKER" "$N"; }
NO_POOL=1 start_broker "$DIR/reactivate"
read -r REACT_COLD REACT_FRAME REACT_SCENE_PSS REACT_SCENE_PRIVATE REACT_FREED <<<"$(reactivations)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
NO_POOL=1 BROKER_BIN=$SBIN start_broker "$DIR/reactivate-installed"
read -r REACT_COLD_STATIC REACT_FRAME_STATIC REACT_SCENE_PSS_STATIC REACT_SCENE_PRIVATE_STATIC REACT_FREED_STATIC <<<"$(reactivations)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
fig "reactivate a reclaimed scene -> placeholder p50" "$REACT_FRAME" "ms" "open -> first frame p50, cold (same rounds)" "$REACT_COLD"
fig "installed: the same, forked" "$REACT_FRAME_STATIC" "ms" "open -> first frame p50, cold (same rounds)" "$REACT_COLD_STATIC"
fig "reclaim with a display: PSS given back" "$(kib_as_mib "$REACT_FREED")" "MiB" "the scene's PSS before it" "$(kib_as_mib "$REACT_SCENE_PSS")"
fig "  the same" "$(kib_as_mib "$REACT_FREED")" "MiB" "the scene's private pages before it" "$(kib_as_mib "$REACT_SCENE_PRIVATE")"
fig "installed: the same, forked" "$(kib_as_mib "$REACT_FREED_STATIC")" "MiB" "the scene's PSS before it" "$(kib_as_mib "$REACT_SCENE_PSS_STATIC")"
fig "  the same" "$(kib_as_mib "$REACT_FREED_STATIC")" "MiB" "the scene's private pages before it" "$(kib_as_mib "$REACT_SCENE_PRIVATE_STATIC")"

# ---------------------------------------------------------------- the switcher and snapshots
# 50 sessions, each typed into and sent to the background (its picture kept); the switcher is
# asked for 10 times, a second apart (each replaces the last), and answers at its first frame
# on screen.
background_times() {  # $1 = count, $2 = id prefix; opens, types, backgrounds; prints p50 of background in ms
  for i in $(seq "$1"); do
    s=$(W --json open notes --activity notes.edit --info "noteID=$2$i" | json 'd["session"]')
    W send "$s" type --arg text="Note $i: a line of text to draw, and another, and one more for the picture." >/dev/null
    a=$(date +%s%N); W background "$s" >/dev/null; b=$(date +%s%N)
    echo $(( (b - a) / 1000 ))
  done | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'
}
activity_bytes() {  # $1 = state dir: mean stored restoration activity, bytes
  /usr/bin/python3 -c "import sqlite3,sys; print(round(sqlite3.connect(sys.argv[1]).execute('select avg(length(activity)) from restorationActivity').fetchone()[0]))" "$1/state.sqlite"
}
start_broker "$DIR/switcher" --max-workers 128
BG_DISPLAY=$(background_times 50 sw)
# A second apart, as a user asks for it: the process kept ready for the next show is started
# half a second after a show (back to back, most shows would start their own).
for _ in $(seq 10); do sleep 1; W --json switcher | json 'd["firstFrameMs"]'; done | sort -n > "$DIR/switcher.ms"
SWITCHER=$(awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }' "$DIR/switcher.ms")
W switcher --hide >/dev/null
# The pictures and, beside each, the thumbnail its scene drew for the switcher's card.
mean_bytes() { python3 -c 'import os, sys; f = sys.argv[1:]; print(sum(os.path.getsize(p) for p in f) // max(1, len(f)))' "$@"; }
SNAP_FILES=$(ls "$DIR/switcher/state/snapshots/"*.png | grep -v '\.thumbnail\.png$')
SNAP_COUNT=$(echo "$SNAP_FILES" | wc -l)
SNAP_MEAN=$(mean_bytes $SNAP_FILES)
THUMB_MEAN=$(mean_bytes "$DIR/switcher/state/snapshots/"*.thumbnail.png)
ACT_DISPLAY=$(activity_bytes "$DIR/switcher/state")
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
[ -n "$KEYBOARD_PID" ] && kill "$KEYBOARD_PID" 2>/dev/null || true
kill "$SWAY_PID"; wait "$SWAY_PID" 2>/dev/null || true
unset WAYLAND_DISPLAY
start_broker "$DIR/headless" --max-workers 128
BG_HEADLESS=$(background_times 50 hl)
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
fig "switcher, request -> first frame p50 (50 sessions)" "$SWITCHER" "ms" "open -> first frame p50, cold" "$FRAME_COLD"
fig "background with a picture p50 (wmctl, display)" "$BG_DISPLAY" "ms" "background, activity only (headless)" "$BG_HEADLESS"
fig "picture per session ($SNAP_COUNT kept)" "$(awk -v b="$SNAP_MEAN" 'BEGIN { printf "%.1f", b / 1024 }')" "KiB" "restoration activity per session, KiB" "$(awk -v b="$ACT_DISPLAY" 'BEGIN { printf "%.2f", b / 1024 }')"
fig "  its thumbnail (a switcher card)" "$(awk -v b="$THUMB_MEAN" 'BEGIN { printf "%.1f", b / 1024 }')" "KiB" "the picture, KiB" "$(awk -v b="$SNAP_MEAN" 'BEGIN { printf "%.1f", b / 1024 }')"
# Scenes are GTK windows: the limit that matters is the smallest GTK 4 program mapping the same
# window (goals: cold 1.3x, prewarmed 0.3x of it); the bare Wayland clients show GTK's own share.
fig "open -> first frame p50, cold" "$FRAME_COLD" "ms" "minimal GTK 4 program, spawn -> first frame" "$FRAME_GTK_LIMIT"
fig "open -> first frame p50, prewarmed" "$FRAME_WARM" "ms" "minimal GTK 4 program, spawn -> first frame" "$FRAME_GTK_LIMIT"
fig "installed: open -> first frame, cold, forked" "$FRAME_COLD_STATIC" "ms" "minimal GTK 4 program, spawn -> first frame" "$FRAME_GTK_LIMIT"
fig "installed: open -> first frame, cold, spawned" "$FRAME_COLD_SPAWNED_STATIC" "ms" "minimal GTK 4 program, spawn -> first frame" "$FRAME_GTK_LIMIT"
fig "installed: open -> first frame, prewarmed" "$FRAME_WARM_STATIC" "ms" "minimal GTK 4 program, spawn -> first frame" "$FRAME_GTK_LIMIT"
fig "minimal GTK 4 program, spawn -> first frame" "$FRAME_GTK_LIMIT" "ms" "minimal C client (wl_shm), spawn -> first frame" "$FRAME_LIMIT"
fig "  the same" "$FRAME_GTK_LIMIT" "ms" "C client drawing text (pango), spawn -> frame" "$FRAME_TEXT_LIMIT"
# Memory: an idle notes editor's private pages (Private_Clean + Private_Dirty) a second after its
# first frame, beside the GTK program's (goal 1.2x).
fig "idle editor scene, private memory" "$(kib_as_mib "$SCENE_PRIVATE")" "MiB" "minimal GTK 4 program, private, MiB" "$(kib_as_mib "$GTK_PRIVATE")"
fig "installed: idle editor scene, private memory" "$(kib_as_mib "$SCENE_PRIVATE_STATIC")" "MiB" "minimal GTK 4 program, private, MiB" "$(kib_as_mib "$GTK_PRIVATE")"

# ---------------------------------------------------------------- reclaim: save + stop vs kill only
reclaim_run() {  # $1 = scenes, $2 = save|skip; prints the broker-side time of the whole reclaim in ms
  local n=$1 mode=$2 dir
  dir=$(mktemp -d "$DIR/reclaim.XXXXXX")
  start_broker "$dir" --max-workers 128 --mem-available-floor 0
  for i in $(seq "$n"); do
    s=$(W --json open probe --activity notes.edit --info "noteID=r$i" | json 'd["session"]')
    W send "$s" allocate --arg megabytes=8 >/dev/null
    W background "$s" >/dev/null
  done
  sleep 1.5  # let the broker sample every worker's PSS after its allocation
  local flag=""; [ "$mode" = skip ] && flag="--skip-save"
  W --json pressure simulate critical $flag > "$dir/reply.json"
  kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
  python3 - "$dir/reply.json" <<'PY'
import json, sys
from datetime import datetime
r = json.load(open(sys.argv[1]))["reclaimed"]
start = min(datetime.fromisoformat(x["startedAt"].replace("Z", "+00:00")).timestamp() for x in r)
end = max(datetime.fromisoformat(x["startedAt"].replace("Z", "+00:00")).timestamp() + x["seconds"] for x in r)
print(f"{(end - start) * 1000:.1f}")
PY
}
for n in 1 10 50; do
  SKIP=$(reclaim_run "$n" skip)
  SAVE=$(reclaim_run "$n" save)
  fig "reclaim $n background scenes, save + stop" "$SAVE" "ms" "kill only" "$SKIP"
done

# ---------------------------------------------------------------- update fan-out
POSTS=${BENCH_POSTS:-200}
fanout() {  # $1 = label; posts $POSTS events with --wait; prints p50 and p99 of the last acknowledgement in µs, the receivers, and the pause between two posts in µs
  local start end
  start=$(date +%s%N)
  for _ in $(seq "$POSTS"); do W --json post notes tick --wait --payload-json '{"noteID": "bench", "n": 1}'; done > "$DIR/fanout.$1.jsonl"
  end=$(date +%s%N)
  python3 - "$DIR/fanout.$1.jsonl" $(( (end - start) / 1000 / POSTS )) <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
bad = [x for x in r if x["delivered"] != x["receivers"]]
assert not bad, f"{len(bad)} posts were not acknowledged by every scene: {bad[:2]}"
xs = sorted(x["maxMicros"] for x in r)
p50 = xs[len(xs) // 2]
# From one post's start to the next's, less the fan-out itself: the time the machine spends
# starting and ending a wmctl between two posts, which the paused C fan-out waits between rounds.
pause = max(0, int(sys.argv[2]) - p50)
print(f"{p50} {xs[min(len(xs) - 1, int(len(xs) * 0.99))]} {r[0]['receivers']} {pause}")
PY
}
# The same posts back to back over one control connection, as the C and stack-floor fan-outs run
# their rounds: a wmctl per post starts a process and a connection between two posts, and the
# broker and the scenes then meet each post with cold caches.
rounds() { /usr/bin/python3 bench/post_rounds.py "$SOCK" notes "$POSTS"; }
fanout_10_100() {  # $1 = label; opens 10 scenes and posts (a wmctl each, then back to back), then 90 more and the same; prints the four results
  local ten ten_rounds
  for i in $(seq 10); do W open notes --activity notes.edit --info "noteID=f$i" >/dev/null; done
  ten=$(fanout "${1}10")
  ten_rounds=$(rounds)
  for i in $(seq 11 100); do W open notes --activity notes.edit --info "noteID=f$i" >/dev/null; done
  echo "$ten $ten_rounds $(fanout "${1}100") $(rounds)"
}
start_broker "$DIR/fanout" --max-workers 128 --max-foreground 2
read -r F10_P50 F10_P99 F10_N _ R10_P50 R10_P99 _ F100_P50 F100_P99 F100_N _ R100_P50 R100_P99 _ <<<"$(fanout_10_100 "")"
# The broker at rest with the 100 scenes live: its CPU over 20 s (the memory monitor samples each
# second), beside what reading every scene's smaps_rollup once costs (a PSS sample of all of them).
sleep 2
IDLE_T0=$(awk '{print $14 + $15}' "/proc/$BROKER/stat"); sleep 20
IDLE_T1=$(awk '{print $14 + $15}' "/proc/$BROKER/stat")
IDLE_MS=$(python3 -c "import os; print(round(($IDLE_T1 - $IDLE_T0) * 1000 / os.sysconf('SC_CLK_TCK') / 20, 1))")
SMAPS_MS=$(python3 - $(pgrep -P "$BROKER" -d ' ' -x notes) <<'PY'
import os, sys, time
paths = [f"/proc/{pid}/smaps_rollup" for pid in sys.argv[1:]]
start = time.process_time()
for _ in range(10):
    for path in paths:
        fd = os.open(path, os.O_RDONLY); os.read(fd, 4096); os.close(fd)
# No scene found (none a child of the broker): no baseline rather than a zero to divide by.
print(round((time.process_time() - start) * 1000 / 10, 1) if paths else "")
PY
)
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
fig "post --wait to $F10_N scenes, last ack p50" "$F10_P50" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "post --wait to $F10_N scenes, last ack p99" "$F10_P99" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "post --wait to $F100_N scenes, last ack p50" "$F100_P50" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "post --wait to $F100_N scenes, last ack p99" "$F100_P99" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "posts back to back, $F10_N scenes, p50" "$R10_P50" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "posts back to back, $F100_N scenes, p50" "$R100_P50" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "broker at rest, $F100_N live scenes, CPU per second" "$IDLE_MS" "ms" "reading their $F100_N smaps_rollup once" "$SMAPS_MS"
# The same posts with the installed broker and notes (static stdlib, scenes forked from the
# app's zygote): what a user's machine runs. A release-build scene (shared Swift runtime,
# spawned) spends about three times the CPU on each delivery.
BROKER_BIN=$SBIN start_broker "$DIR/fanout-installed" --max-workers 128 --max-foreground 2
read -r IF10_P50 IF10_P99 IF10_N IF10_PAUSE IR10_P50 IR10_P99 _ IF100_P50 IF100_P99 IF100_N IF100_PAUSE IR100_P50 IR100_P99 _ <<<"$(fanout_10_100 i)"
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
# The C fan-out with the same pause before each round as the wmctl loop left between two posts:
# after a pause the first wake-ups find idle CPUs and cold caches, the baseline's as much as ours
# (back to back both stay warm, the rows below).
FANOUT10_PAUSED=$("$DIR/bin/fanout" 10 "$POSTS" "$IF10_PAUSE")
FANOUT100_PAUSED=$("$DIR/bin/fanout" 100 "$POSTS" "$IF100_PAUSE")
# And the stack's floor paused alike: what NIO and swift-protobuf alone take for a fan-out that
# comes to sleeping processes, the share of a `wmctl` per post that is not ours.
FLOOR_FAN10_PAUSED=$("$SBIN/stack-floor" fan 10 "$POSTS" --pause "$(ms "$IF10_PAUSE" %.3f)")
FLOOR_FAN100_PAUSED=$("$SBIN/stack-floor" fan 100 "$POSTS" --pause "$(ms "$IF100_PAUSE" %.3f)")
fig "installed: post --wait to $IF10_N scenes, p50" "$IF10_P50" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "installed: post --wait to $IF10_N scenes, p99" "$IF10_P99" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "installed: post --wait to $IF100_N scenes, p50" "$IF100_P50" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "installed: post --wait to $IF100_N scenes, p99" "$IF100_P99" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "installed: post --wait to $IF10_N scenes, p50" "$IF10_P50" "µs" "C fan-out to 10, paused $(ms "$IF10_PAUSE") ms a round" "$FANOUT10_PAUSED"
fig "installed: post --wait to $IF100_N scenes, p50" "$IF100_P50" "µs" "C fan-out to 100, paused $(ms "$IF100_PAUSE") ms a round" "$FANOUT100_PAUSED"
fig "the stack's floor: fan-out to 10 processes" "$FLOOR_FAN10" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "the stack's floor: fan-out to 100 processes" "$FLOOR_FAN100" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "the stack's floor: fan-out to 10, paused alike" "$FLOOR_FAN10_PAUSED" "µs" "C fan-out to 10, paused $(ms "$IF10_PAUSE") ms a round" "$FANOUT10_PAUSED"
fig "the stack's floor: fan-out to 100, paused alike" "$FLOOR_FAN100_PAUSED" "µs" "C fan-out to 100, paused $(ms "$IF100_PAUSE") ms a round" "$FANOUT100_PAUSED"
fig "installed: post --wait to $IF10_N scenes, p50" "$IF10_P50" "µs" "the stack's floor: fan-out to 10, paused alike" "$FLOOR_FAN10_PAUSED"
fig "installed: post --wait to $IF100_N scenes, p50" "$IF100_P50" "µs" "the stack's floor: fan-out to 100, paused alike" "$FLOOR_FAN100_PAUSED"
fig "installed: back to back, $IF10_N scenes, p50" "$IR10_P50" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "installed: back to back, $IF10_N scenes, p99" "$IR10_P99" "µs" "C fan-out to 10 processes, p50" "$FANOUT10_C"
fig "installed: back to back, $IF100_N scenes, p50" "$IR100_P50" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "installed: back to back, $IF100_N scenes, p99" "$IR100_P99" "µs" "C fan-out to 100 processes, p50" "$FANOUT100_C"
fig "installed: back to back, $IF10_N scenes, p50" "$IR10_P50" "µs" "the stack's floor: fan-out to 10" "$FLOOR_FAN10"
fig "installed: back to back, $IF100_N scenes, p50" "$IR100_P50" "µs" "the stack's floor: fan-out to 100" "$FLOOR_FAN100"

# ---------------------------------------------------------------- search over 10,000 sessions
start_broker "$DIR/search" --max-workers 8
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
python3 - "$DIR/search/state/state.sqlite" <<'PY'
import random, sqlite3, sys, time, uuid
sys.path.insert(0, "bench")
from stored_activity import activity
rng = random.Random(7)
syllables = ["ka", "lo", "mi", "ne", "su", "ta", "vo", "ri", "pa", "de", "gu", "ze", "bo", "fi", "ha", "jo"]
vocabulary = ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(20000)]
common = ["meeting", "notes", "project", "travel", "budget"]
db = sqlite3.connect(sys.argv[1])
now = time.time()
rows, acts = [], []
for i in range(10000):
    sid = str(uuid.uuid4()).upper()
    words = [rng.choice(vocabulary) for _ in range(40)] + [rng.choice(common)]
    rng.shuffle(words)
    title = " ".join(words[:3])
    rows.append((sid, "notes", "Editor", "windowApplication", title, now - i, now - i))
    acts.append((sid, activity(title, f"note-{i}", " ".join(words), words[:8]), now - i))
db.executemany("INSERT INTO session (id, appID, configuration, role, title, createdAt, lastActiveAt, launchCount) VALUES (?,?,?,?,?,?,?,1)", rows)
db.executemany("INSERT INTO restorationActivity (sessionID, activity, savedAt) VALUES (?,?,?)", acts)
db.commit()
print(vocabulary[123], file=open(sys.argv[1] + ".rare", "w"))
PY
RARE=$(cat "$DIR/search/state/state.sqlite.rare")
start_broker "$DIR/search" --max-workers 8 --rebuild-index
SEARCH_PING=$(W --json ping --count 2000 | json 'd["p50Micros"]')
read -r S_COMMON_P50 S_COMMON_P99 <<<"$(W --json search meeting --repeat-count 500 | json 'd["p50Micros"], d["p99Micros"]')"
read -r S_RARE_P50 S_RARE_P99 <<<"$(W --json search "$RARE" --repeat-count 500 | json 'd["p50Micros"], d["p99Micros"]')"
read -r S_PREFIX_P50 S_PREFIX_P99 <<<"$(W --json search "${RARE:0:3}*" --repeat-count 500 | json 'd["p50Micros"], d["p99Micros"]')"
SESSIONS=$(W --json status | json 'd["sessions"]')
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
INDEX_BYTES=$(stat -c %s "$DIR/search/state/search.sqlite")
fig "search, $SESSIONS sessions, common word p50" "$S_COMMON_P50" "µs" "wmctl ping p50 (same run)" "$SEARCH_PING"
fig "search, $SESSIONS sessions, common word p99" "$S_COMMON_P99" "µs" "wmctl ping p50 (same run)" "$SEARCH_PING"
fig "search, $SESSIONS sessions, rare word p50" "$S_RARE_P50" "µs" "wmctl ping p50 (same run)" "$SEARCH_PING"
fig "search, $SESSIONS sessions, rare word p99" "$S_RARE_P99" "µs" "wmctl ping p50 (same run)" "$SEARCH_PING"
fig "search, $SESSIONS sessions, prefix p50" "$S_PREFIX_P50" "µs" "wmctl ping p50 (same run)" "$SEARCH_PING"
fig "search, $SESSIONS sessions, prefix p99" "$S_PREFIX_P99" "µs" "wmctl ping p50 (same run)" "$SEARCH_PING"
fig "search index per session (41-word notes)" "$(python3 -c "print($INDEX_BYTES / $SESSIONS)")" "B" "" ""

# ---------------------------------------------------------------- broker memory
# The installed broker (what a user runs). RSS counts its binary's pages too (file pages the
# kernel can drop and read again); RssAnon is what the broker itself allocated.
rss() { awk -v k="$2" '$1 == k":" {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
BROKER_BIN=$SBIN start_broker "$DIR/rss" --max-workers 128 --max-foreground 2
sleep 1
RSS_EMPTY=$(rss "$BROKER" VmRSS); ANON_EMPTY=$(rss "$BROKER" RssAnon)
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
# Stored sessions as notes leaves them: each with a restoration activity (the note id and a
# 200-character text), none running.
store_sessions() {  # $1 = state.sqlite, $2 = how many
python3 - "$1" "$2" <<'PY'
import sqlite3, sys, time, uuid
sys.path.insert(0, "bench")
from stored_activity import activity
db = sqlite3.connect(sys.argv[1])
now = time.time()
rows, acts = [], []
for i in range(int(sys.argv[2])):
    sid = str(uuid.uuid4()).upper()
    rows.append((sid, "archived", "Editor", "windowApplication", f"stored note {i}", now - i, now - i))
    acts.append((sid, activity(f"stored note {i}", f"n{i}", "a line of a stored note " * 8), now - i))
db.executemany("INSERT INTO session (id, appID, configuration, role, title, createdAt, lastActiveAt, launchCount) VALUES (?,?,?,?,?,?,?,1)", rows)
db.executemany("INSERT INTO restorationActivity (sessionID, activity, savedAt) VALUES (?,?,?)", acts)
db.commit()
PY
}
store_sessions "$DIR/rss/state/state.sqlite" 900
BROKER_BIN=$SBIN start_broker "$DIR/rss" --max-workers 128 --max-foreground 2
sleep 1
RSS_STORED=$(rss "$BROKER" VmRSS); ANON_STORED=$(rss "$BROKER" RssAnon)
for i in $(seq 100); do W open notes --activity notes.edit --info "noteID=live$i" >/dev/null; done
SESSIONS=$(W --json status | json 'd["sessions"]')
WORKERS=$(W --json status | json 'd["workers"]')
RSS=$(rss "$BROKER" VmRSS); ANON=$(rss "$BROKER" RssAnon)
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
# What a stored session costs, from 10,000 of them: with 900 the growth is a few hundred
# pages, and where malloc's arenas happen to end moves it by a third from run to run.
BROKER_BIN=$SBIN start_broker "$DIR/rss10k" --max-workers 8
sleep 1
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
store_sessions "$DIR/rss10k/state/state.sqlite" 10000
BROKER_BIN=$SBIN start_broker "$DIR/rss10k" --max-workers 8
sleep 1
ANON_10K=$(rss "$BROKER" RssAnon)
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
PER_1000=$(awk -v a="$ANON_10K" -v b="$ANON_EMPTY" 'BEGIN { printf "%.2f", (a - b) / 10 }')
# No baselines: what each figure is compared with is the others (a ratio of RSS to what the
# broker allocated would mean nothing).
fig "installed broker RSS, no sessions" "$RSS_EMPTY" "MiB" "" ""
fig "  of it allocated (RssAnon)" "$ANON_EMPTY" "MiB" "" ""
fig "installed broker RSS, 900 stored sessions" "$RSS_STORED" "MiB" "" ""
fig "  of it allocated (RssAnon)" "$ANON_STORED" "MiB" "" ""
fig "  allocated per 1,000 stored sessions (not live; from 10,000)" "$PER_1000" "MiB" "" ""
fig "installed broker RSS, $SESSIONS sessions + $WORKERS live workers" "$RSS" "MiB" "" ""
fig "  of it allocated (RssAnon)" "$ANON" "MiB" "" ""

# ---------------------------------------------------------------- footprint: installed binaries, an idle worker
# The installed form, as scripts/install.sh builds it: static stdlib, then stripped.
mib() { stat -c %s "$1" | awk '{ printf "%.1f", $1 / 1048576 }'; }
stripped_mib() {  # $1 = product: its installed-form binary, stripped as scripts/install.sh does
  cp "$SBIN/$1" "$DIR/bin/$1.installed" && strip "$DIR/bin/$1.installed" && mib "$DIR/bin/$1.installed"
}
SYSTEMCTL_SIZE=$(mib "$(command -v systemctl)")
# The floor: NIO, swift-protobuf and the schema with the static runtime and FoundationEssentials
# they bring, and none of our code beyond the schema (stack-floor).
FLOOR_SIZE=$(stripped_mib stack-floor)
fig "the stack's floor binary, stripped" "$FLOOR_SIZE" "MiB" "systemctl, installed" "$SYSTEMCTL_SIZE"
for product in windowbrokerd wmctl notes windowbroker-ui; do
  size=$(stripped_mib "$product")
  fig "installed $product, stripped" "$size" "MiB" "systemctl, installed" "$SYSTEMCTL_SIZE"
  fig "  the same" "$size" "MiB" "the stack's floor binary" "$FLOOR_SIZE"
done
# Private dirty memory (smaps_rollup) once idle: what the process costs the machine. Its clean
# pages (code and data read from its own file) can be dropped and read again under pressure.
private_kib() { awk '/^Private_Dirty:/ { s += $2 } END { print s }' "/proc/$1/smaps_rollup"; }
idle_program_kib() {  # runs the command until it says "ready" and has idled 0.5 s; prints its private dirty KiB
  local out pid kib
  out=$(mktemp "$DIR/idle.XXXXXX")
  "$@" > "$out" &
  pid=$!
  for _ in $(seq 100); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  kib=$(private_kib "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$kib"
}
swiftc -O -static-stdlib -o "$DIR/bin/idle_foundation" bench/idle_foundation.swift
IDLE_KIB=$(idle_program_kib "$DIR/bin/idle_foundation")
# The smallest Foundation program, linked as the installed binaries are, idle.
IDLE_PROBE_KIB=$(idle_program_kib "$SBIN/spawn-probe" --idle)
start_broker "$DIR/idle"
python3 - "$DIR/idle/apps" "$DIR/bin/notes.installed" <<'PY'
import json, sys
# The installed notes twice: its workers forked from its zygote, and spawned.
m = json.load(open("apps/notes.json")); m["id"] = "installed"; m["executable"] = sys.argv[2]; m["zygote"] = True
json.dump(m, open(sys.argv[1] + "/installed.json", "w"))
m["id"] = "installed-spawned"; m.pop("zygote")
json.dump(m, open(sys.argv[1] + "/installed-spawned.json", "w"))
PY
kill -HUP "$BROKER"
for _ in $(seq 100); do W --json apps | grep -q '"installed-spawned"' && break; sleep 0.05; done
idle_worker() {  # $1 = app; prints the pid of an idle background scene of it
  local session
  session=$(W --json open "$1" --activity notes.edit --info "noteID=idle-$1" | json 'd["session"]')
  W background "$session" >/dev/null
  W --json show "$session" | json 'd["pid"]'
}
FORKED_PID=$(idle_worker installed)
SPAWNED_PID=$(idle_worker installed-spawned)
ZYGOTE_PID=$(W --json status | json 'd["zygotes"]["installed"]')
sleep 1
pss_kib() { awk '/^Pss:/ { print $2 }' "/proc/$1/smaps_rollup"; }
WORKER_KIB=$(private_kib "$FORKED_PID")
WORKER_PSS=$(pss_kib "$FORKED_PID")
SPAWNED_KIB=$(private_kib "$SPAWNED_PID")
SPAWNED_PSS=$(pss_kib "$SPAWNED_PID")
ZYGOTE_KIB=$(private_kib "$ZYGOTE_PID")
kill "$BROKER"; wait "$BROKER" 2>/dev/null || true
fig "idle notes worker (installed), forked: private dirty" "$WORKER_KIB" "KiB" "idle program linking Foundation" "$IDLE_KIB"
fig "idle notes worker (installed), forked: private dirty" "$WORKER_KIB" "KiB" "idle spawn-probe, linked as installed" "$IDLE_PROBE_KIB"
fig "idle notes worker (installed), spawned: private dirty" "$SPAWNED_KIB" "KiB" "idle spawn-probe, linked as installed" "$IDLE_PROBE_KIB"
fig "idle notes worker (installed), forked: private dirty" "$WORKER_KIB" "KiB" "the same, spawned" "$SPAWNED_KIB"
fig "  the app's zygote, once: private dirty" "$ZYGOTE_KIB" "KiB" "idle program linking Foundation" "$IDLE_KIB"
fig "idle notes worker (installed), forked: PSS" "$WORKER_PSS" "KiB" "the same, spawned" "$SPAWNED_PSS"

# ---------------------------------------------------------------- the table
echo
echo "windowbroker bench ($(nproc) CPUs, release build, $(date -u +%FT%TZ))"
python3 - "$FIG" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
print(f"{'figure':<44} {'value':>10}   {'baseline':<40} {'value':>10}   {'ratio':>6}")
def shown(v):  # a figure under one unit (a relay of 0.16 ms) keeps two decimals
    return f"{v:.2f}" if abs(v) < 1 else f"{v:.1f}"
for name, value, unit, base, basevalue in rows:
    ratio = f"{float(value) / float(basevalue):.2f}x" if basevalue else ""
    bv = f"{shown(float(basevalue))} {unit}" if basevalue else ""
    print(f"{name:<44} {shown(float(value)):>7} {unit:<3}  {base:<40} {bv:>10}   {ratio:>6}")
PY
echo "prewarmed opens reported launch: $WARM_LAUNCHES"
