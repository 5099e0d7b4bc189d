"""Open -> first frame: from the moment a client asks for a scene (the open request on the
control socket) to the compositor's "new window" event for it (sway maps a toplevel at its
first committed buffer). Cold (spawned) and prewarmed; and the limits: spawning a minimal C
client that maps one window, to the same event, the same client drawing a line of text
with pango first, and the smallest GTK 4 program that maps a window like a scene's. Then the
private memory (smaps_rollup: Private_Clean + Private_Dirty) of an idle notes editor and of
that GTK program, a second after their first frame. Prints "cold_p50 warm_p50 baseline_p50
text_baseline_p50 gtk_baseline_p50" in ms, then "scene_private_kib gtk_private_kib".

    first_frame.py SWAYSOCK CONTROL_SOCKET FIRST_WINDOW_BINARY FIRST_WINDOW_TEXT_BINARY FIRST_GTK_WINDOW_BINARY N
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Examples", "python"))
import wbwire  # noqa: E402
from wbwire import pb  # noqa: E402
from benchlib import NewWindows, p50, smaps_rollup  # noqa: E402

sway_socket, control_socket, first_window, first_window_text, first_gtk_window, n = sys.argv[1:6] + [int(sys.argv[6])]
windows = NewWindows(sway_socket)
wait_for_window = windows.wait


connection = wbwire.Connection.control(control_socket, "first-frame-bench")


def editor_request(app):
    """An open of a notes editor (an open with no activity is notes' library)."""
    request = pb.OpenRequest(app_id=app, force_new=True)
    request.activity.CopyFrom(pb.UserActivity(activity_type="notes.edit", title="First frame"))
    return request


def open_scene(app):
    for _ in range(200):  # a prewarmed open needs a worker in the pool
        _, status = connection.control_request(status=pb.StatusRequest())
        if app != "warm" or status.prewarmed.get("warm", 0) >= 1:
            break
        time.sleep(0.05)
    started = time.monotonic()
    _, reply = connection.control_request(open=editor_request(app))
    framed = wait_for_window(app, started)
    connection.control_request(close=pb.CloseRequest(session_id=reply.session_id))
    return (framed - started) * 1000


cold = [open_scene("notes") for _ in range(n)]
warm = [open_scene("warm") for _ in range(n)]
# GTK wants a runtime directory of its own (the scenes have their broker's).
client_environment = dict(os.environ, XDG_RUNTIME_DIR=tempfile.mkdtemp(prefix="first-frame-"))


def spawn_client(binary, app_id):
    started = time.monotonic()
    client = subprocess.Popen([binary], env=client_environment)
    took = (wait_for_window(app_id, started) - started) * 1000
    client.kill()
    client.wait()
    return took


limit = [spawn_client(first_window, "first-window") for _ in range(n)]
text_limit = [spawn_client(first_window_text, "first-window-text") for _ in range(n)]
gtk_limit = [spawn_client(first_gtk_window, "first-gtk-window") for _ in range(n)]


def private_kib(pid):
    fields = smaps_rollup(pid)
    return fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)


started = time.monotonic()
_, reply = connection.control_request(open=editor_request("notes"))
wait_for_window("notes", started)
time.sleep(1)
_, listed = connection.control_request(sessions=pb.SessionsRequest())
pid = next((info.pid for info in listed.sessions if info.id == reply.session_id), 0)
scene_private = private_kib(pid) if pid else 0
connection.control_request(close=pb.CloseRequest(session_id=reply.session_id))
started = time.monotonic()
client = subprocess.Popen([first_gtk_window], env=client_environment)
wait_for_window("first-gtk-window", started)
time.sleep(1)
gtk_private = private_kib(client.pid)
client.kill()
client.wait()
print(f"{p50(cold):.2f} {p50(warm):.2f} {p50(limit):.2f} {p50(text_limit):.2f} {p50(gtk_limit):.2f} {scene_private} {gtk_private}")
