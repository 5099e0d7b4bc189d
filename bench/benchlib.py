"""What the benchmarks' Python scripts share: the compositor's "new window" events, by which
they time a first frame (sway maps a toplevel at its first committed buffer and says so on its
IPC socket), a median, and a process's memory as the kernel counts it."""
import json
import socket
import struct
import threading
import time

MAGIC = b"i3-ipc"


class NewWindows:
    """Listens on sway's IPC socket from its creation; `wait(app_id, after)` returns the
    monotonic time of the first new window of app_id seen at or after `after`."""

    def __init__(self, sway_socket):
        self._seen = []  # (monotonic time, app_id)
        self._condition = threading.Condition()
        self._ipc = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._ipc.connect(sway_socket)
        payload = json.dumps(["window"]).encode()
        self._ipc.sendall(MAGIC + struct.pack("<II", len(payload), 2) + payload)  # SUBSCRIBE
        threading.Thread(target=self._listen, daemon=True).start()
        time.sleep(0.3)

    def _exactly(self, count):
        data = b""
        while len(data) < count:
            chunk = self._ipc.recv(count - len(data))
            if not chunk:
                raise SystemExit("sway closed its IPC socket")
            data += chunk
        return data

    def _listen(self):
        while True:
            length, kind = struct.unpack("<II", self._exactly(14)[6:])
            body = json.loads(self._exactly(length))
            if kind == 0x80000003 and body.get("change") == "new":
                with self._condition:
                    self._seen.append((time.monotonic(), body["container"].get("app_id")))
                    self._condition.notify_all()

    def wait(self, app_id, after):
        with self._condition:
            while True:
                for at, app in self._seen:
                    if app == app_id and at >= after:
                        self._seen.remove((at, app))
                        return at
                if not self._condition.wait(timeout=10):
                    raise SystemExit(f"no window of {app_id} appeared")


def p50(values):
    values = sorted(values)
    return values[len(values) // 2]


def smaps_rollup(pid):
    """A process's memory totals in KiB (Pss, Private_Clean, Private_Dirty, ...); empty once it is gone."""
    fields = {}
    try:
        lines = open(f"/proc/{pid}/smaps_rollup").readlines()
    except OSError:
        return fields
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":"):
            fields[parts[0][:-1]] = int(parts[1])
    return fields
