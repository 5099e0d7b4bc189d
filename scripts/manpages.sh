#!/usr/bin/env bash
# Writes wmctl.1 and windowbrokerd.1 into $2 from the programs in $1: their argument parsers
# describe themselves (--experimental-dump-help), so the pages always match the flags.
set -euo pipefail
BIN=$1
OUT=$2
mkdir -p "$OUT"
for program in wmctl windowbrokerd; do
  "$BIN/$program" --experimental-dump-help | python3 "$(dirname "$0")/manpage.py" "$program" "$("$BIN/$program" --version)" > "$OUT/$program.1"
done
