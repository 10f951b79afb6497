"""Python run on a host with the agent's own modules carried in the command (docs/protocol.md, transport).

Every step the installer and the relay run on a host is a module of the agent bundle (`wr_agent/install_*.py`,
`uninstall.py`, `relay.py`), linted and tested with the agent. None runs from the host's disk: the command
carries the modules' text, read from the app's own bundle (`AgentBundle.module_source`, the same bytes in a
frozen app), and a few lines (`_LOADER`) make each one a module under its own name, in import order, then
exit with the last one's `main(argv)`. So a first connect (nothing installed yet) and a host whose installed
bundle is foreign or damaged run the app's code, and the relay that follows a probe is the code of the bundle
whose hash the probe just checked.

Each command runs Python through `python` (the provider's `python_command`: `python3` on the host's PATH, or
this computer's own interpreter) and says so in words when the host has none (exit 127, "wr: no python3").
"""

from __future__ import annotations

import shlex

from workroom.agent_bundle import AgentBundle

PYTHON3: tuple[str, ...] = ("python3",)

CARRIED_FIRST = ("wr_agent", "wr_agent.proc_name")
"""Carried in every command, first: the package (so no `wr_agent` on the host's path is ever imported) and
the module that names the process."""

PROCESS_NAME = "wr-agent-probe"
"""What every carried step calls itself until it says otherwise (the relay does): the agent never counts its
installer as work."""

_LOADER = """\
import sys
for name, source in SOURCES:
    module = sys.modules[name] = type(sys)(name)
    exec(compile(source, "<wr-agent %s>" % name, "exec"), module.__dict__)
sys.modules["wr_agent.proc_name"].set_comm(NAME)
sys.exit(sys.modules[SOURCES[-1][0]].main(sys.argv[1:]))
"""


def carried_script(bundle: AgentBundle, modules: tuple[str, ...]) -> str:
    """Python text that runs `modules` (in import order, after `CARRIED_FIRST`), their text read from `bundle`:
    the last one's `main(sys.argv[1:])` is the exit status."""
    names = CARRIED_FIRST + tuple(m for m in modules if m not in CARRIED_FIRST)
    sources = tuple((m, bundle.module_source(m, m.rpartition(".")[2])) for m in names)
    return f"SOURCES = {sources!r}\nNAME = {PROCESS_NAME!r}\n{_LOADER}"


def python_exec(python: tuple[str, ...], flags: tuple[str, ...] = ()) -> str:
    """`exec PYTHON FLAGS`, or says there is no such Python (exit 127, "wr: no python3") when the host has none.
    The interpreter is the command's last word that is not an option (`env VAR=1 python`, `python3.12 -I`)."""
    interpreter = next((a for a in reversed(python) if not a.startswith("-")), python[-1])
    exe = shlex.quote(interpreter)
    check = f"[ -x {exe} ]" if interpreter.startswith("/") else f"command -v {exe} >/dev/null 2>&1"
    run = " ".join(shlex.quote(a) for a in (*python, *flags))
    return f"{check} || {{ echo 'wr: no python3' >&2; exit 127; }}; exec {run}"


def stdin_command(bundle: AgentBundle, modules: tuple[str, ...], *args: str,
                  python: tuple[str, ...] = PYTHON3) -> tuple[str, bytes]:
    """A command that runs the carried `modules` with `args`, their text sent on its stdin: the steps whose
    stdin is free."""
    quoted = " ".join(shlex.quote(a) for a in args)
    return f"{python_exec(python)} - {quoted}", carried_script(bundle, modules).encode()


def inline_command(bundle: AgentBundle, modules: tuple[str, ...], *args: str, python: tuple[str, ...] = PYTHON3,
                   flags: tuple[str, ...] = ()) -> str:
    """The same with their text on the command line (`-c`), leaving stdin to what the step becomes (the
    relay)."""
    quoted = " ".join(shlex.quote(a) for a in (carried_script(bundle, modules), *args))
    return f"{python_exec(python, flags)} -c {quoted}"
