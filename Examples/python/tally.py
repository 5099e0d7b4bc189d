#!/usr/bin/python3
"""Tally: a scene app in Python, one process per window, launched by windowbrokerd from
apps/tally.json. Each window counts; its count and label survive reclaim and broker restarts
through its restoration activity, and every window hears the others count (update events).

It speaks the worker side of docs/PROTOCOL.md directly: the broker's end of a socketpair is
fd 3; every WorkerCommand gets exactly one answer; what the scene sends on its own (a new
title and activity) is a request, answered before the scene answers the command that caused
it, so a reply never overtakes the state that led to it.

Actions (`wmctl send SESSION ACTION [--arg K=V]`):
  increment [by=N]   count up; the other windows hear `tallied`
  set-label label=T  the window's title becomes "T: count"
  state              {count, label, heard, restoredFrom, callbacks}
  add-command id=I title=T [omit=true]
                     inserts a command in the View menu; answers how many menus the
                     broker's answer carried (none when omit_menu was asked for)
"""

import os
import sys

import wbwire
from wbwire import pb

ACTIVITY_TYPE = "tally.count"


class TallyScene:
    def __init__(self, connection):
        self.connection = connection
        self.app_id = os.environ.get("WINDOWBROKER_APP", "")
        self.session_id = ""
        self.count = 0
        self.label = "Tally"
        self.heard = []            # (sequence, name, count) of update events from the app
        self.restored_from = None  # the count the restoration activity carried
        self.callbacks = []        # the lifecycle callbacks in the order they came
        self.done = False

    # ------------------------------------------------------------ what the scene shows

    def activity(self):
        return pb.UserActivity(activity_type=ACTIVITY_TYPE, title=self.title(),
                               user_info=wbwire.to_dictionary({"count": self.count, "label": self.label}))

    def title(self):
        return f"{self.label}: {self.count}"

    def publish(self):
        """Title and current activity to the broker (the switcher shows them); answered with an ack."""
        update = pb.SceneUpdate(title=self.title(), user_activity=self.activity())
        self.connection.request(worker_message=pb.WorkerMessage(scene_update=update))

    def restore(self, activity):
        info = wbwire.from_dictionary(activity.user_info)
        if isinstance(info.get("count"), int):
            self.count = info["count"]
            self.restored_from = self.count
        if isinstance(info.get("label"), str):
            self.label = info["label"]

    # ------------------------------------------------------------ commands

    def transition(self, transition):
        name = pb.Transition.Name(transition.transition)
        self.callbacks.append(wbwire.camel(name.removeprefix("TRANSITION_")))
        if transition.transition == pb.TRANSITION_DID_BECOME_ACTIVE:
            self.publish()

    def handle(self, command):
        """One WorkerCommand; returns the WorkerMessage that answers it."""
        kind = command.WhichOneof("kind")
        if kind == "connect":
            connect = command.connect
            self.session_id = connect.session.id
            self.callbacks.append("willConnect")
            if connect.HasField("restoration_activity"):
                self.restore(connect.restoration_activity)
            # The transitions that follow willConnect come with it (one answer for all).
            for transition in connect.then:
                self.transition(transition)
            return pb.WorkerMessage(connected=pb.SceneConnected(configuration=connect.session.configuration))
        if kind == "restore_interaction_state":
            self.callbacks.append("restoreInteractionState")
            self.restore(command.restore_interaction_state.activity)
            return ack()
        if kind == "transition":
            for transition in [command.transition, *command.transition.then]:
                self.transition(transition)
            return ack()
        if kind == "restoration_activity_request":
            return pb.WorkerMessage(restoration_activity=pb.RestorationActivityReply(activity=self.activity()))
        if kind == "refresh":
            return pb.WorkerMessage(scene_update=pb.SceneUpdate(title=self.title(), user_activity=self.activity()))
        if kind == "continue_activity":
            self.restore(command.continue_activity.activity)
            self.publish()
            return ack()
        if kind == "perform_action":
            return pb.WorkerMessage(action_result=self.perform(command.perform_action))
        if kind == "update":
            delivery = command.update
            if delivery.WhichOneof("kind") == "event":
                payload = wbwire.from_dictionary(delivery.event.payload)
                self.heard.append([delivery.sequence, delivery.event.name, payload.get("count")])
            return ack()
        if kind == "perform_command":
            # No responder here performs keyboard commands: an empty handled_by says so.
            return pb.WorkerMessage(command_result=pb.CommandResult())
        if kind == "validate_commands":
            states = pb.CommandStates()
            for wire in command.validate_commands.commands:
                answer = states.commands.add()
                answer.CopyFrom(wire)
                answer.enabled = False
            return pb.WorkerMessage(command_states=states)
        if kind == "memory_warning":
            # Nothing cached to let go of: the count is all there is.
            return pb.WorkerMessage(memory_warning=pb.MemoryWarningReply(freed_bytes=0))
        if kind == "disconnect":
            self.callbacks.append("didDisconnect")
            self.done = True
            return ack()
        if kind == "discard_sessions":
            return ack()
        if kind == "key_status":
            # didBecomeKey / didResignKey: tally takes no keys.
            return ack()
        raise wbwire.BrokerError("invalidRequest", f"tally does not know the command {kind}")

    def perform(self, action):
        arguments = wbwire.from_dictionary(action.arguments)
        if action.action == "increment":
            by = arguments.get("by", 1)
            try:
                by = int(by)
            except ValueError:
                return pb.ActionResult(decline_reason=f"by must be a whole number, not {by!r}")
            self.count += by
            self.publish()
            post = pb.PostRequest(app_id=self.app_id, name="tallied",
                                  payload=wbwire.to_dictionary({"count": self.count, "session": self.session_id}))
            self.connection.control_request(post=post)
            return performed(self.count)
        if action.action == "set-label":
            label = arguments.get("label")
            if not isinstance(label, str) or not label:
                return pb.ActionResult(decline_reason="set-label takes --arg label=TEXT")
            self.label = label
            self.publish()
            return performed(self.title())
        if action.action == "add-command":
            command = pb.MenuCommand(id=arguments.get("id", ""), title=arguments.get("title", ""))
            insert = pb.MenuInsert(child_of="view", element=pb.MenuNode(command=command))
            change = pb.MenuChangeRequest(operations=[pb.MenuOperation(insert=insert)],
                                          omit_menu=arguments.get("omit") in (True, "true"))
            _, menu = self.connection.control_request(menu_change=change)
            return performed({"app": menu.app_id, "menus": len(menu.menus)})
        if action.action == "state":
            return performed({"count": self.count, "label": self.label, "heard": self.heard,
                              "restoredFrom": self.restored_from, "callbacks": self.callbacks})
        return pb.ActionResult(decline_reason=f"tally has no action '{action.action}' (increment, set-label, add-command, state)")

    # ------------------------------------------------------------ the loop

    def run(self):
        while not self.done:
            try:
                envelope = self.connection.next_frame()
            except wbwire.BrokerError:
                return  # the broker went away: so does the scene
            if envelope.WhichOneof("body") != "worker_command":
                continue
            try:
                answer = self.handle(envelope.worker_command)
                self.connection.reply(envelope, worker_message=answer)
            except wbwire.BrokerError as error:
                if error.code == "connectionClosed":
                    return
                code = getattr(pb, "ERROR_CODE_" + wbwire.snake(error.code).upper(), pb.ERROR_CODE_WORKER_FAILED)
                self.connection.reply(envelope, error=pb.Error(code=code, message=error.message))


def ack():
    return pb.WorkerMessage(ack=pb.Ack())


def performed(value):
    return pb.ActionResult(performed=True, value=wbwire.to_plist(value))


def main():
    fd = int(os.environ.get("WINDOWBROKER_FD", "3"))
    try:
        connection = wbwire.Connection.inherited(fd, os.environ.get("WINDOWBROKER_SESSION", ""), "tally.py")
    except (OSError, wbwire.BrokerError) as error:
        sys.exit(f"tally: no broker connection on fd {fd}: {error}; windowbrokerd starts this program")
    print(f"tally: scene process {os.getpid()} for session {os.environ.get('WINDOWBROKER_SESSION', '(prewarmed)')}",
          file=sys.stderr, flush=True)
    TallyScene(connection).run()


if __name__ == "__main__":
    main()
