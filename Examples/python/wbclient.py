#!/usr/bin/python3
"""A windowbroker control client in Python, printing the JSON `wmctl --json` prints.

    wbclient.py status
    wbclient.py apps
    wbclient.py sessions [--app APP]
    wbclient.py open APP [--activity TYPE] [--title T] [--target ID] [--info K=V ...] [--new]
    wbclient.py show|activate|background|reclaim|close SESSION
    wbclient.py watch [--app APP] [--event NAME] [--count N]

The output follows the schemas in docs/schema (the tests check it against them). Errors are
`{"error": {"code": ..., "message": ...}}` on stdout with exit status 1, or 3 when no broker
is running; usage errors exit 2.
"""

import argparse
import datetime
import json
import sys

import wbwire
from wbwire import pb


def iso(seconds):
    """As wmctl: ISO 8601 with milliseconds, empty for 0."""
    if not seconds:
        return ""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_object(info):
    live = info.pid != 0
    return {
        "id": info.id,
        "app": info.app_id,
        "title": info.title,
        "configuration": info.configuration,
        "state": wbwire.state_name(info.state),
        "key": info.key,
        "pid": info.pid if live else None,
        "createdAt": iso(info.created_at),
        "lastActiveAt": iso(info.last_active_at),
        "hasRestoration": info.restoration_saved,
        "hasSnapshot": info.snapshot_kept,
        "lastDisconnect": info.last_disconnect or None,
        "launchCount": info.launch_count,
        "pss": info.pss_bytes if live else None,
        "presentation": "prominent" if info.presentation == pb.PRESENTATION_STYLE_PROMINENT else "standard",
        "requestedBy": info.requested_by or None,
        "crashLoopRetryAfterSeconds": round(info.crash_loop_retry_after_seconds, 1) if info.crash_loop_retry_after_seconds > 0 else None,
    }


def activity_object(activity, present):
    if not present:
        return None
    return {
        "activityType": activity.activity_type,
        "title": activity.title,
        "targetContentIdentifier": activity.target_content_identifier or None,
        "userInfo": wbwire.json_ready(wbwire.from_dictionary(activity.user_info)),
        "keywords": list(activity.keywords),
        "eligibleForSearch": activity.eligible_for_search,
        "interactionState": wbwire.json_ready(activity.interaction_state) if activity.interaction_state else None,
    }


def state_object(reply, showing_created):
    out = {"session": reply.session_id, "state": wbwire.state_name(reply.state), "detail": reply.detail}
    if showing_created:
        out["created"] = reply.created
    launches = {pb.LAUNCH_KIND_EXISTING: "existing", pb.LAUNCH_KIND_SPAWNED: "spawned", pb.LAUNCH_KIND_PREWARMED: "prewarmed",
                pb.LAUNCH_KIND_FORKED: "forked"}
    if reply.launch in launches:
        out["launch"] = launches[reply.launch]
        out["presentation"] = "prominent" if reply.presentation == pb.PRESENTATION_STYLE_PROMINENT else "standard"
    return out


def pressure_name(level):
    return {pb.PRESSURE_LEVEL_WARNING: "warning", pb.PRESSURE_LEVEL_CRITICAL: "critical"}.get(level, "normal")


def status(connection, args):
    _, s = connection.control_request(status=pb.StatusRequest())
    return {
        "version": s.version, "pid": s.pid, "uptimeSeconds": round(s.uptime_seconds, 3),
        "sessions": s.sessions, "workers": s.workers, "pressure": pressure_name(s.pressure_level),
        "reclaimed": s.reclaimed_count, "prewarmed": dict(s.prewarmed), "zygotes": dict(s.zygotes), "warnings": list(s.warnings),
        "storeWrites": s.store_writes, "updatesPosted": s.updates_posted, "updatesDropped": s.updates_dropped,
    }


def apps(connection, args):
    _, reply = connection.control_request(apps=pb.AppsRequest())
    return [{"id": a.id, "name": a.name, "supportsMultipleScenes": a.supports_multiple_scenes,
             "activityTypes": list(a.activity_types), "commandErrors": list(a.command_errors),
             **({"zygote": a.zygote} if a.zygote else {})} for a in reply.apps]


def sessions(connection, args):
    # Page by page, as the broker hands them out: no reply outgrows a frame.
    out, offset = [], 0
    while True:
        _, page = connection.control_request(sessions=pb.SessionsRequest(app_id=args.app or "", offset=offset))
        out += [session_object(info) for info in page.sessions]
        offset = page.next_offset
        if offset == 0:
            return out


def open_scene(connection, args):
    info = {}
    for pair in args.info:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            usage(f"--info takes KEY=VALUE, not '{pair}'")
        info[key] = value
    request = pb.OpenRequest(app_id=args.app, force_new=args.new, session_id=args.session or "")
    if args.activity or args.title or args.target or info:
        # An empty type: the broker uses the app's first declared activity type.
        request.activity.CopyFrom(pb.UserActivity(activity_type=args.activity or "", title=args.title or "",
                                                  target_content_identifier=args.target or "",
                                                  user_info=wbwire.to_dictionary(info)))
    _, reply = connection.control_request(open=request)
    return state_object(reply, showing_created=True)


def show(connection, args):
    _, info = connection.control_request(show=pb.SessionCommand(session_id=args.session))
    out = session_object(info)
    out["restorationActivity"] = activity_object(info.restoration_activity, info.HasField("restoration_activity"))
    out["currentActivity"] = activity_object(info.current_activity, info.HasField("current_activity"))
    out["quarantinedRestoration"] = activity_object(info.quarantined_restoration, info.HasField("quarantined_restoration"))
    out["storage"] = wbwire.json_ready(wbwire.from_dictionary(info.storage))
    return out


def session_command(kind):
    # activate, reclaim and close have messages of their own (with options this client leaves unset).
    message = {"activate": pb.ActivateRequest, "reclaim": pb.ReclaimRequest, "close": pb.CloseRequest}.get(kind, pb.SessionCommand)

    def run(connection, args):
        _, reply = connection.control_request(**{kind: message(session_id=args.session)})
        return state_object(reply, showing_created=False)
    return run


def watch(connection, args):
    connection.control_request(watch=pb.WatchRequest(app_ids=args.app_ids, events=args.events))
    print("watching (ctrl-c to stop)", file=sys.stderr, flush=True)
    seen = 0
    while args.count is None or seen < args.count:
        envelope = connection.next_frame()
        if envelope.WhichOneof("body") != "lifecycle_event":
            continue
        event = envelope.lifecycle_event
        emit({"time": iso(event.time), "session": event.session_id, "app": event.app_id,
              "event": event.event, "detail": event.detail, "title": event.title}, args)
        seen += 1
    return None


def emit(value, args):
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2 if args.pretty else None,
                      separators=None if args.pretty else (",", ":"))
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # The reader went away (| head): quiet, with the status a shell gives SIGPIPE.
        sys.stderr.close()
        sys.exit(141)


def usage(message):
    print(json.dumps({"error": {"code": "usage", "message": message}}, separators=(",", ":")))
    sys.exit(2)


def parser():
    def options(suppress):
        # Before or after the command, as wmctl takes them; the command's copy must not
        # overwrite what was given before it.
        common = argparse.ArgumentParser(add_help=False)
        default = {"default": argparse.SUPPRESS} if suppress else {}
        common.add_argument("--socket", help="the control socket (default: $WINDOWBROKER_SOCKET, "
                            "else $XDG_RUNTIME_DIR/windowbroker/control.sock)", **default)
        common.add_argument("--pretty", action="store_true", help="indented JSON", **default)
        return common

    top = argparse.ArgumentParser(prog="wbclient.py", description="A windowbroker control client; prints JSON like wmctl --json.",
                                  parents=[options(suppress=False)])
    subcommands = top.add_subparsers(dest="command", required=True)

    class Commands:
        @staticmethod
        def add_parser(name, **kwargs):
            return subcommands.add_parser(name, parents=[options(suppress=True)], **kwargs)
    commands = Commands()
    commands.add_parser("status", help="the broker's version, pid, uptime and counts").set_defaults(run=status)
    commands.add_parser("apps", help="the installed apps").set_defaults(run=apps)
    listing = commands.add_parser("sessions", help="every session (the app switcher)")
    listing.add_argument("--app", help="only this app's")
    listing.set_defaults(run=sessions)
    opening = commands.add_parser("open", help="open a scene of an app; it ends foregroundActive")
    opening.add_argument("app")
    opening.add_argument("--activity", help="an activity type the app declares (default: its first)")
    opening.add_argument("--title")
    opening.add_argument("--target", help="targetContentIdentifier")
    opening.add_argument("--info", action="append", default=[], help="a userInfo entry KEY=VALUE (repeatable)")
    opening.add_argument("--new", action="store_true", help="always a new scene")
    opening.add_argument("--session", help="an existing session to bring forward")
    opening.set_defaults(run=open_scene)
    for name, run in [("show", show), ("activate", session_command("activate")), ("background", session_command("background")),
                      ("reclaim", session_command("reclaim")), ("close", session_command("close"))]:
        command = commands.add_parser(name, help=f"{name} a session")
        command.add_argument("session", help="a session id or a unique prefix of 4+ characters")
        command.set_defaults(run=run)
    watching = commands.add_parser("watch", help="lifecycle events, one JSON object per line")
    watching.add_argument("--app", dest="app_ids", action="append", default=[])
    watching.add_argument("--event", dest="events", action="append", default=[])
    watching.add_argument("--count", type=int, help="stop after this many events")
    watching.set_defaults(run=watch)
    return top


def main():
    args = parser().parse_args()
    try:
        connection = wbwire.Connection.control(args.socket or wbwire.default_socket_path(), "wbclient.py")
        try:
            result = args.run(connection, args)
        finally:
            connection.close()
    except wbwire.BrokerError as error:
        body = {"code": error.code, "message": error.message}
        if error.retry_after:
            body["retryAfterSeconds"] = round(error.retry_after, 1)
        print(json.dumps({"error": body}, sort_keys=True, separators=(",", ":")))
        sys.exit(3 if error.code == "brokerUnreachable" else 1)
    except KeyboardInterrupt:
        sys.exit(130)
    if result is not None:
        emit(result, args)


if __name__ == "__main__":
    main()
