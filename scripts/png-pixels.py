#!/usr/bin/env python3
"""Prints WIDTHxHEIGHT and the SHA-256 of a PNG's pixels as RGB, whatever the file's encoding
(cairo writes RGBA, grim RGB; the compression differs): two pictures of the same pixels print
the same line. 8-bit, non-interlaced PNGs of colour type 2 (RGB) or 6 (RGBA) only.

    png-pixels.py FILE.png [x y width height]   # optionally a crop
    png-pixels.py FILE.png --at x y [x y ...]   # the colours at those points, as rrggbb
    png-pixels.py FILE.png --bounds rrggbb [x y width height]
        # "x y width height" of the pixels of that colour (within the crop), or "none"
    png-pixels.py PICTURE.png --over SCREEN.png x y
        # PICTURE (a window's own, with alpha) against SCREEN at (x, y): "N differ, M translucent,
        # C in corners" counts the opaque pixels whose colour differs, the ones not opaque (a
        # window's rounded corners, which the compositor blends with what is behind them), and
        # of those that differ the ones within 8 pixels of a corner (where a window clips a
        # picture of itself to its own rounded corners again)
"""
import hashlib
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise SystemExit(f"{path}: depth {depth}, colour type {colour}, interlace {interlace}: not supported")
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


width, height, channels, rows = pixels(sys.argv[1])
if len(sys.argv) > 2 and sys.argv[2] == "--over":
    _, _, screen_channels, screen = pixels(sys.argv[3])
    ox, oy = int(sys.argv[4]), int(sys.argv[5])
    differ = translucent = corners = 0
    for py in range(height):
        for px in range(width):
            pixel = rows[py][px * channels:(px + 1) * channels]
            if channels == 4 and pixel[3] != 0xFF:
                translucent += 1
            elif pixel[:3] != screen[oy + py][(ox + px) * screen_channels:(ox + px) * screen_channels + 3]:
                differ += 1
                if min(px, width - 1 - px) < 8 and min(py, height - 1 - py) < 8:
                    corners += 1
    print(f"{differ} differ, {translucent} translucent, {corners} in corners")
    sys.exit(0)
if len(sys.argv) > 2 and sys.argv[2] == "--at":
    points = [int(v) for v in sys.argv[3:]]
    print(" ".join(rows[py][px * channels:px * channels + 3].hex() for px, py in zip(points[0::2], points[1::2])))
    sys.exit(0)
if len(sys.argv) > 3 and sys.argv[2] == "--bounds":
    colour = bytes.fromhex(sys.argv[3])
    x, y, w, h = (int(v) for v in sys.argv[4:8]) if len(sys.argv) >= 8 else (0, 0, width, height)
    xs, ys = [], []
    for py in range(y, min(y + h, height)):
        row = rows[py]
        found = [px for px in range(x, min(x + w, width)) if row[px * channels:px * channels + 3] == colour]
        if found:
            xs += (found[0], found[-1])
            ys.append(py)
    print(f"{min(xs)} {min(ys)} {max(xs) - min(xs) + 1} {max(ys) - min(ys) + 1}" if xs else "none")
    sys.exit(0)
x, y, w, h = (int(v) for v in sys.argv[2:6]) if len(sys.argv) >= 6 else (0, 0, width, height)
digest = hashlib.sha256()
for row in rows[y:y + h]:
    for i in range(x, x + w):
        digest.update(row[i * channels:i * channels + 3])
print(f"{w}x{h} {digest.hexdigest()}")
