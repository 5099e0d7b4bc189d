#!/usr/bin/env bash
# Installs the system packages the build and tests need, only when missing.
# libsqlite3-dev: GRDB links the system SQLite. libsystemd-dev + pkg-config: the CSystemd
# module (sd_notify, sd_listen_fds, sd_journal_sendv). systemd: systemd-socket-activate and
# systemd-analyze for the tests (installing the package starts nothing). python3-protobuf and
# protobuf-compiler: the Python examples generate their message classes from the .proto.
# sqlite3: tests damage a stored row on purpose.
# libgtk-4-dev: every scene's window (GTK 4). libwayland-dev, libxkbcommon-dev, libpango1.0-dev,
# libcairo2-dev: the system UI's surfaces. sway, grim, wtype, wl-clipboard and fonts: the window
# tests run a headless sway, take screenshots and read its clipboard (CJK and emoji need their fonts).
# weston: the same tests on a compositor without title bars or a layer shell, nested in that sway.
# dbus-daemon and dbus-bin: the D-Bus tests run a private bus and call it with dbus-send
# (busctl comes with systemd).
# With `bench`: also what the benchmark's baselines need (a C compiler).
# With `deb`: what builds and checks the Debian package (dpkg-dev, fakeroot, lintian).
set -euo pipefail
packages=(libsqlite3-dev pkg-config libsystemd-dev systemd python3-protobuf protobuf-compiler sqlite3
  libgtk-4-dev libwayland-dev libxkbcommon-dev libpango1.0-dev libcairo2-dev sway grim wtype wl-clipboard weston fonts-wqy-microhei fonts-noto-color-emoji
  dbus-daemon dbus-bin)
[ "${1:-}" = bench ] && packages+=(gcc libc6-dev)
[ "${1:-}" = deb ] && packages+=(dpkg-dev fakeroot lintian)
needed=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || needed+=("$pkg")
done
if [ ${#needed[@]} -gt 0 ]; then
  echo "installing: ${needed[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${needed[@]}"
fi
command -v swift >/dev/null || { echo "swift is not on PATH (expected /opt/swift/usr/bin)"; exit 1; }
