"""The Python that runs this computer's agent: the app's own, never whatever `python3` is on PATH.

From Finder an app gets PATH=/usr/bin:/bin:/usr/sbin:/sbin, where `/usr/bin/python3` is Apple's placeholder
that opens an "install developer tools" dialog when the Command Line Tools are missing (`command -v python3`
still succeeds). So: from source the agent runs with `sys.executable`; the frozen app runs it with its own
binary, which acts as a plain Python interpreter when started with AS_PYTHON_ENV=1 (`run_as_python`).
The variable is inherited, so the agent's own `sys.executable` re-launches (its supervisor, `--version`
probes) keep working. See docs/macos.md.
"""

from __future__ import annotations

import os
import runpy
import sys

AS_PYTHON_ENV = "WORKROOM_AS_PYTHON"
IGNORED_FLAGS = frozenset(("-I", "-S", "-E", "-s", "-P"))


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def local_python_command() -> tuple[str, ...]:
    """The command prefix that runs a Python script or zipapp with the app's own interpreter."""
    if is_frozen():
        return ("/usr/bin/env", f"{AS_PYTHON_ENV}=1", sys.executable)
    return (sys.executable,)


def wants_python(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(AS_PYTHON_ENV) == "1"


def run_as_python(argv: list[str]) -> int:
    """Behave like `python3 -` (script on stdin), `python3 -c CODE args...` (the agent's launcher) or
    `python3 FILE|ZIPAPP args...`: all the agent needs. Interpreter flags before them (`-I -S`: the agent's
    launcher runs it apart from the user's Python set-up, launcher.AGENT_FLAGS) are what the frozen app already
    is: no site, no user site, no PYTHON* variables read for its imports; they are taken and dropped."""
    while argv and argv[0] in IGNORED_FLAGS:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("workroom-app: as Python, give - or a script path\n")
        return 2
    target, rest = argv[0], argv[1:]
    code_text = None
    if target == "-c":
        if not rest:
            sys.stderr.write("workroom-app: as Python, -c needs the code\n")
            return 2
        code_text, rest = rest[0], rest[1:]
    sys.argv = [target, *rest]
    try:
        if code_text is not None:
            exec(compile(code_text, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        elif target == "-":
            code = compile(sys.stdin.read(), "<stdin>", "exec")
            exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        code_ = done.code
        if code_ is None:
            return 0
        if isinstance(code_, int):
            return code_
        sys.stderr.write(f"{code_}\n")
        return 1
    return 0
