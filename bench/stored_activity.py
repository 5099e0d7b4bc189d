"""Restoration activities as the broker stores them (a protobuf UserActivity), written by hand
for the bench's stores: notes' activity type, a title, a target, userInfo {noteID, text}."""


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def text(num, s):
    return field(num, s.encode())


def activity(title, target, body, keywords=()):
    plist = lambda s: text(1, s)
    info = field(1, text(1, "noteID") + field(2, plist(target))) + field(1, text(1, "text") + field(2, plist(body)))
    return (text(1, "notes.edit") + text(2, title) + text(3, target) + field(4, info)
            + b"".join(text(5, k) for k in keywords) + varint(6 << 3) + varint(1))
