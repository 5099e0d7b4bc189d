# Turns an argument parser's --experimental-dump-help JSON (stdin) into a man page (stdout).
# Used by scripts/manpages.sh: python3 scripts/manpage.py PROGRAM VERSION
import json, sys, datetime
program, version = sys.argv[1], sys.argv[2]
info = json.load(sys.stdin)["command"]
def esc(text): return (text or "").replace("\\", "\\\\").replace("-", "\\-").replace("\n.", "\n\\&.")
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
lines = [f'.TH {program.upper()} 1 "{datetime.date.today():%Y-%m-%d}" "windowbroker {esc(version)}" "windowbroker"',
         ".SH NAME", f"{program} \\- {esc(info.get('abstract', ''))}", ".SH SYNOPSIS"]
subcommands = [s for s in info.get("subcommands", []) if s.get("shouldDisplay", True) and s["commandName"] != "help"]
lines.append(f".B {program}" + (" \\fIcommand\\fR [\\fIoptions\\fR]" if subcommands else " [\\fIoptions\\fR]"))
if info.get("discussion"): lines += [".SH DESCRIPTION", esc(info["discussion"])]
if arguments(info.get("arguments")): lines += [".SH OPTIONS"] + arguments(info.get("arguments"))
if subcommands:
    lines.append(".SH COMMANDS")
    for sub in subcommands:
        usage = " ".join(synopsis(a) for a in sub.get("arguments", []) if a["kind"] == "positional")
        lines += [".SS " + esc(f"{sub['commandName']} {usage}".strip()), esc(sub.get("abstract", ""))]
        if sub.get("discussion"): lines += [".PP", esc(sub["discussion"])]
        lines += arguments([a for a in sub.get("arguments", []) if not any(n in ("--socket", "--json") for n in names(a))])
if program == "wmctl":
    lines += [".SH GLOBAL OPTIONS", ".TP\n.B \\-\\-socket <path>\nThe broker's control socket (default: $WINDOWBROKER_SOCKET, else $XDG_RUNTIME_DIR/windowbroker/control.sock).",
              ".TP\n.B \\-\\-json\nPrint JSON instead of text.",
              ".SH EXIT STATUS", "0 success; 1 the broker refused; 2 usage; 3 the broker cannot be reached; 141 the reader of the output went away."]
else:
    lines += [".SH FILES", "$XDG_CONFIG_HOME/windowbroker/windowbrokerd.conf (every option as key = value), $XDG_STATE_HOME/windowbroker/state.sqlite, search.sqlite, $XDG_RUNTIME_DIR/windowbroker/control.sock"]
lines += [".SH SEE ALSO", "wmctl(1), windowbrokerd(1), systemd.socket(5); the documentation in share/doc/windowbroker."]
print("\n".join(lines))
