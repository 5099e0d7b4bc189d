#!/usr/bin/env bash
# make deb: a Debian package of what `make install` puts under /usr (the programs, libexec,
# the user units in /usr/lib/systemd/user, man pages, completions, the docs and the example
# config), built as a user would install it: `sudo apt install ./windowbroker_*.deb`. Its
# dependencies are the libraries the programs link (dpkg-shlibdeps); lintian checks it when
# it is installed (make deps installs it). OUT=DIR says where the .deb goes (default: here).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD}
STAGE=$(mktemp -d /tmp/windowbroker-deb.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/root
install -d -m 0755 "$ROOT"
DESTDIR=$ROOT PREFIX=/usr bash scripts/install.sh install >/dev/null

VERSION=$("$ROOT/usr/bin/wmctl" --version | awk '{ print $1 }')  # "0.1.0 (protocol 2)"
ARCH=$(dpkg --print-architecture)
DOC=$ROOT/usr/share/doc/windowbroker

# What Debian asks of every package's documentation: its copyright and its changelog. The
# sources name no license yet, and the copyright file says so rather than choose one.
cat > "$DOC/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: windowbroker
Upstream-Contact: the windowbroker developers

Files: *
Copyright: 2026 the windowbroker developers
License: other
 The sources name no license yet: until they do, all rights are reserved by the
 windowbroker developers.
EOF
chmod 0644 "$DOC/copyright"
{
  echo "windowbroker ($VERSION) unstable; urgency=medium"
  echo
  echo "  * Built from $(git rev-parse --short HEAD 2>/dev/null || echo 'a source tree')."
  echo
  echo " -- windowbroker developers <windowbroker@users.noreply.github.com>  $(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n > "$DOC/changelog.gz"
chmod 0644 "$DOC/changelog.gz"

# wmctl is linked position-dependent on purpose: as a PIE its loader patched 70,000 pointers
# at every start (README, "A command's start"); the broker and the apps stay PIE.
install -d -m 0755 "$ROOT/usr/share/lintian/overrides"
printf '# wmctl starts faster position-dependent (the README says why); it serves no one but its user.\nwindowbroker: hardening-no-pie [usr/bin/wmctl]\n' \
  > "$ROOT/usr/share/lintian/overrides/windowbroker"
chmod 0644 "$ROOT/usr/share/lintian/overrides/windowbroker"

# dpkg-shlibdeps reads a source package's debian/control: a minimal one beside the tree.
mkdir -p "$STAGE/debian"
printf 'Source: windowbroker\n\nPackage: windowbroker\nArchitecture: any\n' > "$STAGE/debian/control"
mapfile -t ELVES < <(cd "$STAGE" && find root -type f -exec sh -c 'head -c 4 "$1" | grep -q "ELF"' _ {} \; -print | sort)
DEPENDS=$(cd "$STAGE" && dpkg-shlibdeps -O --ignore-missing-info "${ELVES[@]/#/-e}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')

install -d -m 0755 "$ROOT/DEBIAN"
cat > "$ROOT/DEBIAN/control" <<EOF
Package: windowbroker
Version: $VERSION
Architecture: $ARCH
Maintainer: windowbroker developers <windowbroker@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
Depends: $DEPENDS
Section: x11
Priority: optional
Description: many windows per app, each a session that outlives its process
 windowbroker gives Linux apps scenes as iPadOS does: each window is a session
 with its own process, kept in an app switcher across reclaims, crashes and
 reboots, with state restoration and memory-pressure reclamation that the user
 does not notice. A broker runs as a systemd user service (windowbrokerd),
 wmctl drives it, and apps link the SceneWorker SDK; the reference notes app
 is included.
EOF
# The user units are enabled by each user (systemctl --user enable --now windowbroker.socket).
fakeroot dpkg-deb --build -Zxz "$ROOT" "$OUT/windowbroker_${VERSION}_${ARCH}.deb" >/dev/null
echo "built $OUT/windowbroker_${VERSION}_${ARCH}.deb"
if command -v lintian >/dev/null; then
  lintian --fail-on error "$OUT/windowbroker_${VERSION}_${ARCH}.deb"
fi
