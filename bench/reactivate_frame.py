"""Reclaim and reactivation with a display, N rounds on one notes editor each: open it (cold
open -> first frame, the baseline), send it to the background (its picture is kept), reclaim
it, activate it again (reactivate -> the placeholder's first frame on screen: the picture the
scene left, shown while the new process restores). Around each reclaim, the PSS of every
process the broker runs (itself, zygotes, scenes, the system UI), so what the reclaim gave back
is set beside the scene's own PSS and its private pages. Prints "cold_p50 reactivate_p50" in
ms, then the means of "scene_pss_kib scene_private_kib freed_kib".

    reactivate_frame.py SWAYSOCK CONTROL_SOCKET BROKER_PID N
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Examples", "python"))
import wbwire  # noqa: E402
from wbwire import pb  # noqa: E402
from benchlib import NewWindows, p50, smaps_rollup  # noqa: E402

sway_socket, control_socket, broker_pid, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
windows = NewWindows(sway_socket)
connection = wbwire.Connection.control(control_socket, "reactivate-bench")


def broker_processes():
    """The broker and every process below it."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    found, frontier = {broker_pid}, [broker_pid]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in found]
        found.update(children)
        frontier += children
    return found


def total_pss(pids):
    return sum(smaps_rollup(pid).get("Pss", 0) for pid in pids)


def scene_pid(session):
    _, listed = connection.control_request(sessions=pb.SessionsRequest(app_id="notes"))
    return next((info.pid for info in listed.sessions if info.id == session), 0)


def gone(pid, within=10):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.02)
    return False


cold, reactivated, scene_pss, scene_private, freed = [], [], [], [], []
for round in range(n):
    request = pb.OpenRequest(app_id="notes", force_new=True)
    request.activity.CopyFrom(pb.UserActivity(activity_type="notes.edit", title=f"Reactivation {round}"))
    started = time.monotonic()
    _, reply = connection.control_request(open=request)
    cold.append((windows.wait("notes", started) - started) * 1000)
    session = reply.session_id
    time.sleep(0.5)  # idle, as a scene a person left is
    connection.control_request(background=pb.SessionCommand(session_id=session))
    time.sleep(1)
    pid = scene_pid(session)
    if not pid:
        raise SystemExit(f"session {session} has no process in the background")
    before = broker_processes() | {pid}
    pss_before = total_pss(before)
    memory = smaps_rollup(pid)
    scene_pss.append(memory.get("Pss", 0))
    scene_private.append(memory.get("Private_Clean", 0) + memory.get("Private_Dirty", 0))
    connection.control_request(reclaim=pb.ReclaimRequest(session_id=session))
    if not gone(pid):
        raise SystemExit(f"the reclaimed scene (pid {pid}) did not exit")
    time.sleep(1.5)  # the broker trims its heap within a second after a scene ends
    freed.append(pss_before - total_pss(before | broker_processes()))
    started = time.monotonic()
    connection.control_request(activate=pb.ActivateRequest(session_id=session))
    reactivated.append((windows.wait("notes", started) - started) * 1000)
    connection.control_request(close=pb.CloseRequest(session_id=session))
print(f"{p50(cold):.2f} {p50(reactivated):.2f} {sum(scene_pss) // n} {sum(scene_private) // n} {sum(freed) // n}")
