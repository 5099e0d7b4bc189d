#!/usr/bin/env bash
# make fuzz: libFuzzer over what a peer can send (framing, envelopes, every value the broker and
# the SDK validate, plist JSON, shortcuts, search queries). Bounded: FUZZ_SECONDS (default 60).
# Starts from the seed corpus in fuzz/corpus (not modified; new inputs go to a temporary copy);
# a crash is saved under fuzz/crashes/ and replays with:
#   swift run wire-fuzz fuzz/crashes/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${FUZZ_SECONDS:-60}
swift build --build-path .build-fuzz --product wire-fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING >/dev/null
BIN=$(swift build --build-path .build-fuzz --show-bin-path)
WORK=$(mktemp -d /tmp/wire-fuzz.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp fuzz/corpus/* "$WORK/"
mkdir -p fuzz/crashes
echo "fuzzing for ${SECONDS_TO_RUN}s from $(ls fuzz/corpus | wc -l) seeds"
"$BIN/wire-fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=fuzz/crashes/ -print_final_stats=1 "$WORK" 2>&1 | grep -E "^#[0-9]+ *(DONE|pulse)|stat::|ERROR|SUMMARY|Test unit written|crash-" || true
if ls fuzz/crashes/crash-* fuzz/crashes/timeout-* fuzz/crashes/oom-* >/dev/null 2>&1; then
  echo "FUZZ FOUND A PROBLEM: see fuzz/crashes/ (replay: swift run wire-fuzz FILE)"
  exit 1
fi
echo "no crash or timeout in ${SECONDS_TO_RUN}s; corpus grew to $(ls "$WORK" | wc -l) inputs"
