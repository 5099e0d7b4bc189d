#!/usr/bin/env bash
# CI: the Debian package as a user meets it. Built (make deb: lintian finds no error), its
# contents where Debian puts them, installed with apt on this machine (root only: CI's
# disposable one), run without the toolchain, then removed leaving none of its files.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(mktemp -d /tmp/windowbroker-deb-check.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
bash scripts/install-deps.sh deb
OUT=$OUT bash scripts/deb.sh
DEB=$(ls "$OUT"/windowbroker_*.deb)
contents=$(dpkg-deb -c "$DEB" | awk '{ print $NF }')
for path in ./usr/bin/windowbrokerd ./usr/bin/wmctl ./usr/libexec/windowbroker/notes ./usr/libexec/windowbroker/windowbroker-ui \
            ./usr/libexec/windowbroker/libwindowbroker-drawing.so ./usr/lib/systemd/user/windowbroker.service \
            ./usr/lib/systemd/user/windowbroker.socket ./usr/share/man/man1/wmctl.1.gz ./usr/share/doc/windowbroker/copyright \
            ./usr/share/windowbroker/apps/notes.json; do
  grep -qxF "$path" <<<"$contents" || { echo "check-deb: $path is not in the package"; exit 1; }
done
echo "package contents as expected: $(grep -c . <<<"$contents") entries"
if [ "$(id -u)" -ne 0 ]; then
  echo "check-deb: not root, so the package is built and checked but not installed"
  exit 0
fi
apt-get install -y -qq -o DPkg::Lock::Timeout=300 "$DEB" >/dev/null
files=$(dpkg -L windowbroker)
# It runs from where it is installed, with nothing of the build tree on its path.
env -i PATH=/usr/bin:/bin /usr/bin/wmctl --version
env -i PATH=/usr/bin:/bin /usr/bin/windowbrokerd --version
# The units as systemd reads them where the package put them (no user manager is started).
mkdir -m 0700 "$OUT/run"
MAN_CHECK=(); command -v man >/dev/null || MAN_CHECK=(--man=no)
XDG_RUNTIME_DIR="$OUT/run" systemd-analyze --user verify "${MAN_CHECK[@]}" \
  /usr/lib/systemd/user/windowbroker.socket /usr/lib/systemd/user/windowbroker.service
# A newcomer's first run, from the package alone: the guided tour with the installed programs
# and apps (on a headless sway of its own when there is no display).
WINDOWBROKER_BIN_DIR=/usr/bin WINDOWBROKER_APPS_DIR=/usr/share/windowbroker/apps DEMO_SCREENSHOTS="$OUT/shots" \
  bash scripts/demo.sh >"$OUT/demo.log" 2>&1 || { echo "check-deb: the demo failed with the installed package:"; tail -30 "$OUT/demo.log"; exit 1; }
steps=$(grep -c '== ' "$OUT/demo.log" || true)  # each step's heading (bold where tput knows the terminal)
[ "$steps" -gt 5 ] || { echo "check-deb: the demo with the installed package took only $steps steps:"; tail -30 "$OUT/demo.log"; exit 1; }
echo "the demo ran with the installed package ($steps steps)"
apt-get remove -y -qq -o DPkg::Lock::Timeout=300 windowbroker >/dev/null
left=$(while read -r file; do [ -f "$file" ] && echo "$file"; done <<<"$files" || true)
[ -z "$left" ] || { echo "check-deb: removing the package left files behind:"; echo "$left"; exit 1; }
echo "package check passed: built, lintian clean of errors, installed, run, removed"
