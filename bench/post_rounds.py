#!/usr/bin/python3
"""make bench: COUNT posts of one update to every connected scene of APP, with wait, back to
back over one control connection: the fan-out measured the way the C and stack-floor baselines
run theirs (one sender, one round after the other). Each reply carries the broker's time from
the post to its last acknowledgement. Checks that every scene acknowledged every post, and
prints the p50 and p99 of those times in microseconds and the number of receivers.

A `wmctl post --wait` per post measures the same thing with a process started and a
connection set up between two posts, which leaves the caches of the broker and the scenes to
other work: both are printed.

    post_rounds.py SOCKET APP COUNT
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Examples", "python"))
import wbwire  # noqa: E402
from wbwire import pb  # noqa: E402


def main():
    path, app, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    poster = wbwire.Connection.control(path, "bench-post")
    times, receivers = [], None
    for _ in range(count):
        request = pb.PostRequest(app_id=app, name="tick", wait=True, wait_timeout_seconds=10)
        request.payload.CopyFrom(wbwire.to_dictionary({"noteID": "bench", "n": 1}))
        kind, reply = poster.control_request(post=request)
        assert kind == "post", f"the broker answered a post with {kind}"
        assert reply.delivered == reply.receivers, f"{reply.receivers - reply.delivered} of {reply.receivers} scenes did not acknowledge"
        receivers = reply.receivers
        times.append(reply.max_micros)
    poster.close()
    times.sort()
    print(f"{times[len(times) // 2]} {times[min(len(times) - 1, int(len(times) * 0.99))]} {receivers}")


if __name__ == "__main__":
    main()
