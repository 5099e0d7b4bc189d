#!/usr/bin/env bash
# Builds the system UI's drawing library (Sources/CSceneWindow: the switcher's and the overlay's surfaces)
# as the installed form has it: OUTDIR/libwindowbroker-drawing.so, linked with the system's
# wayland, xkbcommon, cairo and pango only. `swift build` builds the same library as the
# product windowbroker-drawing, but SwiftPM links every library with the Swift runtime's
# start-up object, and so with libswiftCore.so, which an install has no copy of (its programs
# link the standard library statically).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: build-drawing.sh OUTDIR}
mkdir -p "$OUT"
# shellcheck disable=SC2046  # pkg-config's flags are words
${CC:-cc} -std=gnu11 -O2 -g -fPIC -shared -fvisibility=default -Wl,--as-needed -Wl,-z,now -Wl,-z,relro \
  -I Sources/CSceneWindowLoader/include -I Sources/CSceneWindow/include -I Sources/CSceneWindow \
  Sources/CSceneWindow/*.c \
  $(pkg-config --cflags --libs wayland-client xkbcommon pangocairo) \
  -o "$OUT/libwindowbroker-drawing.so"
