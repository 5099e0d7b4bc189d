# Sourced by the demo and the benchmark: start_headless_sway DIR LOG starts a headless sway
# with its own runtime directory under DIR (sway refuses root: as root it runs as uid 65534)
# and sets SWAY_PID, SWAYSOCK and WAYLAND_DISPLAY (exported). The caller kills SWAY_PID, and
# KEYBOARD_PID when set: a virtual keyboard (wtype, sleeping) that keeps a keyboard on the
# headless seat, as a desktop has. Without it the first wtype adds the seat's keyboard, the
# windows bind it only then, and the first key it types reaches none of them.
start_headless_sway() {
  local dir=$1 log=$2 as=()
  mkdir -p "$dir/run" "$dir/home"
  # GTK draws each window's header bar itself: no title bars of sway's above them.
  printf 'output HEADLESS-1 resolution 1280x720\nfocus_on_window_activation focus\ndefault_border none\ndefault_floating_border none\n' >"$dir/config"
  # sway's user must reach its directory through the caller's private one.
  chmod 755 "$(dirname "$dir")" "$dir"
  chmod 644 "$dir/config"
  if [ "$(id -u)" = 0 ]; then
    chown -R 65534:65534 "$dir"
    as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
  chmod 700 "$dir/run"
  "${as[@]}" env -i HOME="$dir/home" XDG_RUNTIME_DIR="$dir/run" WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 \
    WLR_RENDERER=pixman sway -c "$dir/config" >"$log" 2>&1 &
  SWAY_PID=$!
  for _ in $(seq 100); do [ -S "$dir/run/wayland-1" ] && compgen -G "$dir/run/sway-ipc.*" >/dev/null && break; sleep 0.1; done
  export WAYLAND_DISPLAY=$dir/run/wayland-1
  SWAYSOCK=$(compgen -G "$dir/run/sway-ipc.*" | head -n 1)
  KEYBOARD_PID=""
  if command -v wtype >/dev/null; then
    wtype -s 86400000 &
    KEYBOARD_PID=$!
    for _ in $(seq 50); do swaymsg -s "$SWAYSOCK" -t get_inputs -r 2>/dev/null | grep -q '"keyboard"' && break; sleep 0.1; done
  fi
}
