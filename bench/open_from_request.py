#!/usr/bin/python3
"""make bench: COUNT opens of a new session of APP over one control connection, each timed
from the moment its request was written, while a second connection watches the broker's
events. Prints three p50s in ms: request -> didBecomeActive (what the user waits for),
created -> didBecomeActive (the broker-side figure, from the start of the session's turn)
and request -> the open's answer (the scene is key and what it reported is on disk).
With --prewarmed, each open waits until the app's pool holds a prewarmed process.

    open_from_request.py SOCKET APP COUNT NOTE_PREFIX [--prewarmed]
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Examples", "python"))
import wbwire  # noqa: E402
from wbwire import pb  # noqa: E402


def p50(values):
    values = sorted(values)
    return values[len(values) // 2] if values else float("nan")


def main():
    path, app, count, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    prewarmed = "--prewarmed" in sys.argv[5:]
    watcher = wbwire.Connection.control(path, "bench-watch")
    watcher.control_request(watch=pb.WatchRequest(app_ids=[app], events=["created", "didBecomeActive"]))
    opener = wbwire.Connection.control(path, "bench-open")
    requested, answered = {}, {}
    for i in range(count):
        if prewarmed:
            for _ in range(400):
                _, status = opener.control_request(status=pb.StatusRequest())
                if dict(status.prewarmed).get(app, 0) >= 1:
                    break
                time.sleep(0.01)
            time.sleep(0.05)  # the pool's refill is done with before the open
        request = pb.OpenRequest(app_id=app)
        request.activity.CopyFrom(pb.UserActivity(
            activity_type="notes.edit", user_info=wbwire.to_dictionary({"noteID": f"{prefix}{i}"})))
        start = time.time()
        _, reply = opener.control_request(open=request)
        answered[reply.session_id] = time.time() - start
        requested[reply.session_id] = start
        # As between wmctl commands: the last scene's own work after its open is done.
        time.sleep(0.05)
    # Every open was answered after its didBecomeActive: the events are all sent already.
    seen = {}
    while sum(len(kinds) for kinds in seen.values()) < 2 * count:
        envelope = watcher.next_frame()
        if envelope.WhichOneof("body") == "lifecycle_event":
            event = envelope.lifecycle_event
            if event.session_id in requested:
                seen.setdefault(event.session_id, {}).setdefault(event.event, event.time)
    from_request = [s["didBecomeActive"] - requested[i] for i, s in seen.items()]
    from_created = [s["didBecomeActive"] - s["created"] for s in seen.values()]
    print(f"{p50(from_request) * 1000:.2f} {p50(from_created) * 1000:.2f} {p50(answered.values()) * 1000:.2f}")


if __name__ == "__main__":
    main()
