#!/usr/bin/env bash
# make install / make uninstall. Honours DESTDIR (staging root) and PREFIX (default ~/.local).
#
#   bin/windowbrokerd, bin/wmctl              stripped, Swift standard library linked statically
#   libexec/windowbroker/notes                the reference app (not a command)
#   libexec/windowbroker/windowbroker-ui      the switcher and command overlay (the broker runs it)
#   libexec/windowbroker/libwindowbroker-drawing.so  what draws the windows (loaded by a scene
#                                             that has a display; scripts/build-drawing.sh)
#   share/windowbroker/apps/*.json            its manifests, pointing at libexec
#   <unit dir>/windowbroker.{socket,service}  generated with the real paths
#   share/man/man1/{wmctl,windowbrokerd}.1.gz generated from the argument parsers
#   share/{bash-completion,zsh,fish}/...      wmctl completions (session ids from the broker)
#   share/doc/windowbroker/                   README, docs (with the JSON Schemas), config example,
#                                             the .proto and the Python examples
#
# The unit directory is $PREFIX/lib/systemd/user for /usr and /usr/local, else
# $PREFIX/share/systemd/user (~/.local/share/systemd/user is on systemd's user search path).
# Nothing touches systemd unless SYSTEMCTL=1.
set -euo pipefail
cd "$(dirname "$0")/.."
ACTION=${1:-install}
PREFIX=${PREFIX:-$HOME/.local}
DESTDIR=${DESTDIR:-}
BINDIR=$PREFIX/bin
LIBEXECDIR=$PREFIX/libexec/windowbroker
DATADIR=$PREFIX/share
DOCDIR=$DATADIR/doc/windowbroker
MANDIR=$DATADIR/man
case "$PREFIX" in
  /usr|/usr/local) UNIT_DIR=${UNIT_DIR:-$PREFIX/lib/systemd/user} ;;
  *) UNIT_DIR=${UNIT_DIR:-$DATADIR/systemd/user} ;;
esac
SWIFT=${SWIFT:-swift}
source scripts/release-flags.sh  # RELEASE_BUILD

# The broker's whole stop (--stop-timeout) and systemd's limit on it, kept apart by a margin
# for the broker's exit after its last scene: STOP_TIMEOUT=90 make install.
STOP_TIMEOUT=${STOP_TIMEOUT:-45}
[[ "$STOP_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || { echo "STOP_TIMEOUT is whole seconds above zero, not '$STOP_TIMEOUT'" >&2; exit 2; }
TIMEOUT_STOP_SEC=$((STOP_TIMEOUT + 15))

write_units() {
  install -d "$DESTDIR$UNIT_DIR"
  for unit in windowbroker.socket windowbroker.service; do
    sed -e "s|@BINDIR@|$BINDIR|g" -e "s|@DOCDIR@|$DOCDIR|g" -e "s|@STOP_TIMEOUT@|$STOP_TIMEOUT|g" \
      -e "s|@TIMEOUT_STOP_SEC@|$TIMEOUT_STOP_SEC|g" "systemd/$unit.in" > "$DESTDIR$UNIT_DIR/$unit"
    chmod 0644 "$DESTDIR$UNIT_DIR/$unit"
  done
}

if [ "$ACTION" = units ]; then  # only the units (the unit-file test uses this)
  write_units
  exit 0
fi

if [ "$ACTION" = uninstall ]; then
  if [ "${SYSTEMCTL:-0}" = 1 ]; then systemctl --user disable --now windowbroker.socket windowbroker.service || true; fi
  rm -f "$DESTDIR$BINDIR/windowbrokerd" "$DESTDIR$BINDIR/wmctl" "$DESTDIR$LIBEXECDIR/notes" "$DESTDIR$LIBEXECDIR/windowbroker-ui" \
        "$DESTDIR$LIBEXECDIR/libwindowbroker-drawing.so"
  rmdir "$DESTDIR$LIBEXECDIR" 2>/dev/null || true
  rm -f "$DESTDIR$DATADIR/windowbroker/apps/notes.json" "$DESTDIR$DATADIR/windowbroker/apps/notes-single.json"
  rm -f "$DESTDIR$UNIT_DIR/windowbroker.socket" "$DESTDIR$UNIT_DIR/windowbroker.service"
  rm -f "$DESTDIR$MANDIR/man1/wmctl.1"* "$DESTDIR$MANDIR/man1/windowbrokerd.1"*
  rm -f "$DESTDIR$DATADIR/bash-completion/completions/wmctl" "$DESTDIR$DATADIR/zsh/site-functions/_wmctl" \
        "$DESTDIR$DATADIR/fish/vendor_completions.d/wmctl.fish"
  rm -rf "$DESTDIR$DOCDIR"
  # The directories install made, when nothing else is in them (up to the prefix and no further).
  for dir in "$BINDIR" "$LIBEXECDIR" "$DATADIR/windowbroker/apps" "$UNIT_DIR" "$MANDIR/man1" "$DATADIR/bash-completion/completions" \
             "$DATADIR/zsh/site-functions" "$DATADIR/fish/vendor_completions.d" "$DATADIR/doc"; do
    while [ "${#dir}" -gt "${#PREFIX}" ]; do
      if [ -d "$DESTDIR$dir" ]; then rmdir "$DESTDIR$dir" 2>/dev/null || break; fi
      dir=$(dirname "$dir")
    done
  done
  echo "uninstalled from $DESTDIR$PREFIX (sessions in \$XDG_STATE_HOME/windowbroker are kept)"
  exit 0
fi

# Nothing is installed on the system here (make deps does that): say what is missing instead.
command -v "$SWIFT" >/dev/null || { echo "install: swift is not on PATH (expected /opt/swift/usr/bin)"; exit 1; }
pkg-config --exists libsystemd sqlite3 gtk4 wayland-client pangocairo xkbcommon 2>/dev/null \
  || { echo "install: build dependencies are missing; run \`make deps\` first (it installs them with apt)"; exit 1; }
"$SWIFT" build "${RELEASE_BUILD[@]}" --product windowbrokerd
"$SWIFT" build "${RELEASE_BUILD[@]}" --product wmctl
"$SWIFT" build "${RELEASE_BUILD[@]}" --product notes
"$SWIFT" build "${RELEASE_BUILD[@]}" --product windowbroker-ui
OUT=$("$SWIFT" build "${RELEASE_BUILD[@]}" --show-bin-path)
bash scripts/build-drawing.sh "$OUT"

install -d "$DESTDIR$BINDIR" "$DESTDIR$LIBEXECDIR" "$DESTDIR$DATADIR/windowbroker/apps" "$DESTDIR$UNIT_DIR" \
  "$DESTDIR$MANDIR/man1" "$DESTDIR$DOCDIR/docs" "$DESTDIR$DATADIR/bash-completion/completions" \
  "$DESTDIR$DATADIR/zsh/site-functions" "$DESTDIR$DATADIR/fish/vendor_completions.d"
install -m 0755 -s "$OUT/windowbrokerd" "$OUT/wmctl" "$DESTDIR$BINDIR/"
install -m 0755 -s "$OUT/notes" "$OUT/windowbroker-ui" "$DESTDIR$LIBEXECDIR/"
install -m 0644 "$OUT/libwindowbroker-drawing.so" "$DESTDIR$LIBEXECDIR/"
strip --strip-unneeded "$DESTDIR$LIBEXECDIR/libwindowbroker-drawing.so"

# The manifests name the reference app where it is installed (libexec is not searched).
for manifest in apps/*.json; do
  python3 - "$manifest" "$LIBEXECDIR/notes" > "$DESTDIR$DATADIR/windowbroker/apps/$(basename "$manifest")" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["executable"] = sys.argv[2]
print(json.dumps(m, indent=2, ensure_ascii=False))
PY
done

write_units

# Man pages and completions come from the programs' own argument parsers.
bash scripts/manpages.sh "$OUT" "$DESTDIR$MANDIR/man1"
gzip -9nf "$DESTDIR$MANDIR/man1/wmctl.1" "$DESTDIR$MANDIR/man1/windowbrokerd.1"  # as Debian ships them
# bash sources its completions: no interpreter line (Debian's policy for them).
"$OUT/wmctl" --generate-completion-script bash | sed '1{/^#!/d}' > "$DESTDIR$DATADIR/bash-completion/completions/wmctl"
"$OUT/wmctl" --generate-completion-script zsh > "$DESTDIR$DATADIR/zsh/site-functions/_wmctl"
"$OUT/wmctl" --generate-completion-script fish > "$DESTDIR$DATADIR/fish/vendor_completions.d/wmctl.fish"

install -m 0644 README.md config/windowbrokerd.conf.example "$DESTDIR$DOCDIR/"
install -m 0644 docs/*.md "$DESTDIR$DOCDIR/docs/"
install -d "$DESTDIR$DOCDIR/docs/images"
install -m 0644 docs/images/*.png "$DESTDIR$DOCDIR/docs/images/"
# The JSON Schemas of wmctl --json, the wire schema, and the Python examples, which find the
# .proto at ../../proto from where they are installed.
install -d "$DESTDIR$DOCDIR/docs/schema" "$DESTDIR$DOCDIR/proto" "$DESTDIR$DOCDIR/examples/python/apps"
install -m 0644 docs/schema/*.schema.json "$DESTDIR$DOCDIR/docs/schema/"
install -m 0644 proto/windowbroker.proto "$DESTDIR$DOCDIR/proto/"
install -m 0755 Examples/python/wbclient.py Examples/python/tally.py "$DESTDIR$DOCDIR/examples/python/"
install -m 0644 Examples/python/wbwire.py Examples/python/README.md "$DESTDIR$DOCDIR/examples/python/"
install -m 0644 Examples/python/apps/tally.json "$DESTDIR$DOCDIR/examples/python/apps/"

echo "installed into $DESTDIR$PREFIX (units in $UNIT_DIR)"
if [ -z "$DESTDIR" ]; then
  # systemd finds units only on its search path; elsewhere they are linked into it first.
  link=""
  if command -v systemd-analyze >/dev/null && ! systemd-analyze --user unit-paths 2>/dev/null | grep -qxF "$UNIT_DIR"; then
    link="systemctl --user link $UNIT_DIR/windowbroker.socket $UNIT_DIR/windowbroker.service && "
  fi
  echo "start it with: ${link}systemctl --user daemon-reload && systemctl --user enable --now windowbroker.socket"
  echo "scenes are windows when the user manager knows your display: systemctl --user import-environment WAYLAND_DISPLAY"
  echo "  (GNOME and KDE do it at login; on sway put \`exec systemctl --user import-environment WAYLAND_DISPLAY\` in its config)"
  if [ "${SYSTEMCTL:-0}" = 1 ]; then
    [ -n "$link" ] && systemctl --user link "$UNIT_DIR/windowbroker.socket" "$UNIT_DIR/windowbroker.service"
    systemctl --user daemon-reload && systemctl --user enable --now windowbroker.socket
  fi
fi
