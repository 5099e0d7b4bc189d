#!/usr/bin/env bash
# Regenerates the xdg-shell client code the window layer is built with, from the system's
# protocol XML (wayland-protocols + wayland-scanner from libwayland-bin). The output is checked in.
set -euo pipefail
cd "$(dirname "$0")/../Sources/CSceneWindow"
xml=/usr/share/wayland-protocols/stable/xdg-shell/xdg-shell.xml
wayland-scanner client-header "$xml" xdg-shell-client-protocol.h
wayland-scanner private-code "$xml" xdg-shell-protocol.c
