# Turns an argument parser's --experimental-dump-help JSON (stdin) into a man page (stdout).
# Used by scripts/manpages.sh: python3 scripts/manpage.py PROGRAM VERSION
import json, sys, datetime
program, version = sys.argv[1], sys.argv[2]
info = json.load(sys.stdin)["command"]
def esc(text): return (text or "").replace("\\", "\\\\").replace("-", "\\-").replace("\n.", "\n\\&.").replace("\n'", "\n\\&'")
def names(arg):
    found = []
    for n in arg.get("names", []):
        found.append(("-" if n["kind"] == "short" else "--") + n["name"])
    return found
def synopsis(arg):
    if arg["kind"] == "positional":
        text = f"<{arg.get('valueName', '')}>"
    else:
        text = ", ".join(names(arg))
        if arg["kind"] == "option": text += f" <{arg.get('valueName', 'value')}>"
    return text + (" ..." if arg.get("isRepeating") else "")
def arguments(args):
    out = []
    for arg in args or []:
        if not arg.get("shouldDisplay", True) or arg.get("valueName") in ("help", "version"): continue
        if any(n in ("--help", "-h", "--version") for n in names(arg)): continue
        out.append(".TP\n.B " + esc(synopsis(arg)) + "\n" + esc(arg.get("abstract", "")))
        if arg.get("defaultValue"): out[-1] += " (default: " + esc(arg["defaultValue"]) + ")"
    return out
def discussion(text):
    # Written as lines (usage lines, lists): kept as they are, not filled into one paragraph.
    return [".PP", ".nf", esc(text), ".fi"]
def commands(subs, parents=""):
    out = []
    for sub in subs:
        if not sub.get("shouldDisplay", True) or sub["commandName"] == "help": continue
        name = (parents + " " + sub["commandName"]).strip()
        nested = [s for s in sub.get("subcommands", []) if s.get("shouldDisplay", True) and s["commandName"] != "help"]
        usage = " ".join(synopsis(a) for a in sub.get("arguments", []) if a["kind"] == "positional")
        out += [".SS " + esc(f"{name} {usage}".strip()), esc(sub.get("abstract", ""))]
        if sub.get("discussion"): out += discussion(sub["discussion"])
        out += arguments([a for a in sub.get("arguments", []) if not any(n in ("--socket", "--json", "--pretty") for n in names(a))])
        out += commands(nested, name)
    return out
lines = [f'.TH {program.upper()} 1 "{datetime.date.today():%Y-%m-%d}" "windowbroker {esc(version)}" "windowbroker"',
         ".SH NAME", f"{program} \\- {esc(info.get('abstract', ''))}", ".SH SYNOPSIS"]
subcommands = [s for s in info.get("subcommands", []) if s.get("shouldDisplay", True) and s["commandName"] != "help"]
lines.append(f".B {program}" + (" \\fIcommand\\fR [\\fIoptions\\fR]" if subcommands else " [\\fIoptions\\fR]"))
if info.get("discussion"): lines += [".SH DESCRIPTION"] + discussion(info["discussion"])
if arguments(info.get("arguments")): lines += [".SH OPTIONS"] + arguments(info.get("arguments"))
if subcommands:
    lines += [".SH COMMANDS"] + commands(subcommands)
def section(title, entries):
    out = [".SH " + title]
    for term, text in entries: out += [".TP", ".B " + esc(term), esc(text)]
    return out
if program == "wmctl":
    lines += section("GLOBAL OPTIONS", [
        ("--socket <path>", "The broker's control socket (default: $WINDOWBROKER_SOCKET, else $XDG_RUNTIME_DIR/windowbroker/control.sock)."),
        ("--json", "Print JSON instead of text; the shapes are in docs/schema/ (share/doc/windowbroker)."),
        ("--pretty", "Indented JSON (implies --json)."),
    ])
    lines += section("ENVIRONMENT", [
        ("WINDOWBROKER_SOCKET", "The control socket, when --socket is not given."),
        ("XDG_RUNTIME_DIR", "Where the control socket is by default: $XDG_RUNTIME_DIR/windowbroker/control.sock."),
        ("XDG_ACTIVATION_TOKEN", "Passed on with open and activate: the scene's window asks its compositor for focus with it."),
        ("COLUMNS", "The width tables are cut to when the output is not a terminal (default 100)."),
    ])
    lines += section("FILES", [("$XDG_RUNTIME_DIR/windowbroker/control.sock", "The broker's control socket (mode 0600, the broker's user only).")])
    lines += [".SH EXIT STATUS", "0 success; 1 the broker refused, or nothing matched (send declined, key unhandled, search found nothing);",
              "2 usage; 3 the broker cannot be reached; 141 the reader of the output went away."]
    lines += [".SH EXAMPLES", ".nf", esc("""wmctl open notes --activity notes.edit --title "Groceries"   open a scene
wmctl sessions                                                 the switcher, as a table
wmctl background 0b6f && wmctl reclaim 0b6f                    save it and take its process
wmctl activate 0b6f                                            back, restored
wmctl watch --event didBecomeActive                            follow the lifecycle
wmctl --json sessions | jq -r '.[].title'                      for scripts
wmctl key ctrl+u                                               a key command for the key scene
wmctl pressure simulate critical                               what memory pressure does"""), ".fi"]
else:
    lines += section("SIGNALS", [
        ("SIGTERM, SIGINT", "A graceful stop: new requests are refused, those in flight are answered, every connected scene saves its state and stops; then the broker exits."),
        ("SIGHUP", "Reread the app manifests (a broken one keeps its last good version)."),
    ])
    lines += section("ENVIRONMENT", [
        ("NOTIFY_SOCKET, WATCHDOG_USEC, LISTEN_FDS, LISTEN_FDNAMES", "Set by systemd: READY=1, STATUS= and WATCHDOG=1 go to the notify socket; a socket-activated control socket is served. None of them reaches a scene process."),
        ("WAYLAND_DISPLAY", "With a display, scenes are windows on it, and the windows that were on screen come back after a restart (--restore-workspace auto)."),
        ("WINDOWBROKER_DRAWING_LIBRARY", "The library the scenes' windows are drawn with, for the scenes (default: libwindowbroker-drawing.so beside windowbrokerd or in ../libexec/windowbroker)."),
        ("DBUS_SESSION_BUS_ADDRESS", "The session bus for org.windowbroker.Broker1 (else $XDG_RUNTIME_DIR/bus; --dbus off turns it off)."),
        ("XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR, XDG_DATA_HOME, XDG_DATA_DIRS", "Where the configuration file, the store, the control socket and the app manifests are (see FILES)."),
    ])
    lines += section("FILES", [
        ("$XDG_CONFIG_HOME/windowbroker/windowbrokerd.conf", "Every option as key = value (flags win)."),
        ("$XDG_STATE_HOME/windowbroker/state.sqlite", "The sessions and their restoration activities; search.sqlite beside it is the search index, snapshots/ the pictures of windows."),
        ("$XDG_RUNTIME_DIR/windowbroker/control.sock", "The control socket (wmctl, scenes' requests)."),
        ("$XDG_DATA_HOME/windowbroker/apps, $XDG_DATA_DIRS/windowbroker/apps", "App manifests (*.json)."),
    ])
    lines += [".SH EXIT STATUS", "0 stopped and every scene saved; 1 could not start (another broker holds the state directory, the store cannot be opened);",
              "3 stopped, but some scenes could not save their state (each is logged; their last committed state is kept); 64 a usage or configuration error (with the file's line)."]
others = [p for p in ("wmctl", "windowbrokerd") if p != program]
lines += [".SH SEE ALSO", ", ".join(f"{p}(1)" for p in others) + ", systemd.socket(5), busctl(1); the documentation in share/doc/windowbroker."]
print("\n".join(lines))
