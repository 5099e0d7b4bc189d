#!/usr/bin/env bash
# Regenerates the Wayland protocol client code the window layer is built with, from the
# system's protocol XML (wayland-protocols + wayland-scanner from libwayland-bin): xdg-shell
# (toplevels), xdg-activation-v1 (focus on activate), xdg-decoration (server-side decorations).
# The output is checked in.
set -euo pipefail
cd "$(dirname "$0")/../Sources/CSceneWindow"
protocols=/usr/share/wayland-protocols
for xml in "$protocols/stable/xdg-shell/xdg-shell.xml" \
           "$protocols/staging/xdg-activation/xdg-activation-v1.xml" \
           "$protocols/unstable/xdg-decoration/xdg-decoration-unstable-v1.xml"; do
  name=$(basename "$xml" .xml)
  wayland-scanner client-header "$xml" "$name-client-protocol.h"
  wayland-scanner private-code "$xml" "$name-protocol.c"
done
# The window tests' pointer helper: a description of wlroots' virtual pointer protocol kept in
# the repository (Debian packages no XML for it).
cd ../wb-pointer
xml=protocol/wlr-virtual-pointer-unstable-v1.xml
wayland-scanner client-header "$xml" wlr-virtual-pointer-unstable-v1-client-protocol.h
wayland-scanner private-code "$xml" wlr-virtual-pointer-unstable-v1-protocol.c
# The system UI's layer surfaces (switcher, command overlay): wlroots' layer shell, described
# in the repository for the same reason.
cd ../CSceneWindow
xml=protocol/wlr-layer-shell-unstable-v1.xml
wayland-scanner client-header "$xml" wlr-layer-shell-unstable-v1-client-protocol.h
wayland-scanner private-code "$xml" wlr-layer-shell-unstable-v1-protocol.c
