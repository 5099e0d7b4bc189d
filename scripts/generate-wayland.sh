#!/usr/bin/env bash
# Regenerates the Wayland protocol client code checked in beside the C that uses it, from the
# system's protocol XML (wayland-protocols + wayland-scanner from libwayland-bin): xdg-shell
# for the system UI (the layer shell's popups name it), xdg-activation-v1 for a scene's focus on
# activate (GTK draws the scenes' windows; this is the one request it makes differently).
set -euo pipefail
cd "$(dirname "$0")/../Sources/CSceneWindow"
protocols=/usr/share/wayland-protocols
scan() {
  name=$(basename "$1" .xml)
  wayland-scanner client-header "$1" "$name-client-protocol.h"
  wayland-scanner private-code "$1" "$name-protocol.c"
}
scan "$protocols/stable/xdg-shell/xdg-shell.xml"
(cd ../CSceneActivation && scan "$protocols/staging/xdg-activation/xdg-activation-v1.xml")
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
