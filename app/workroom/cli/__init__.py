"""The `workroom` command line: the engine, headless.

While the desktop app runs, every command goes through it (`workroom.app_link`): the app runs the same command
here, in its own process against its own engine (`serve`), and the command prints what it says. Without the app
a command runs its own engine (`main`). Either way the words come from this package, through a `Terminal`
(cli/face.py): hosts.py, reach.py (the commands that reach a host), settings.py (settings, secrets, the app),
words.py (what a host's line and JSON say), parser.py.

Exit codes (documented in docs/cli.md): `core.errors.ExitCode`; an error's code is its type's
`UserError.exit_code`.
"""

from __future__ import annotations

import sys

from workroom import __version__

# `workroom --version` and `--help` import nothing more than this (argparse and the version): asyncio, pydantic
# (core.errors), the engine and paramiko are imported by the commands that use them (docs/cli.md, start-up).
# Not even `typing` (mypy reads a module's own TYPE_CHECKING constant as typing's).
TYPE_CHECKING = False

if TYPE_CHECKING:
    import argparse
    from collections.abc import Coroutine
    from typing import Any

    from workroom.cli.face import AppSide, Face, Terminal
    from workroom.cli.parser import Says
    from workroom.sessions.engine import Engine

EXIT_INTERRUPTED = 130
"""Ctrl-C: the shell's own code for a command ended by SIGINT."""
COMMANDS = {"hosts": "hosts", "app": "settings", "connect": "reach", "status": "reach", "keep": "reach",
            "let-sleep": "reach", "why": "reach", "exclusions": "reach", "settings": "settings", "secret": "settings"}
"""Each command, and the module of this package that runs it (as `cmd_<command>`), imported when it runs."""
LOOKS: tuple[tuple[str, ...], ...] = (
    ("status",), ("status", "--json"), ("hosts", "list"), ("hosts", "list", "--json"), ("settings", "get"),
    ("settings", "get", "--json"), ("app", "status"), ("app", "status", "--json"))
"""The commands that only report. Without the app each reads files and the providers' own clocks (their control
planes only), reaches no box, starts and installs nothing, and leaves no process behind; through the app each is the
app's answer (docs/cli.md, "A look is never a touch"; tests/acceptance/test_look_never_touches.py runs each)."""
TOUCHES: tuple[tuple[str, ...], ...] = (
    ("connect",), ("status", "--live"), ("status", "--watch"), ("keep",), ("let-sleep",), ("why",),
    ("exclusions",), ("hosts", "remove", "--uninstall"))
"""The commands that reach a box, because they were asked to: on a network-metered box each moves its idle clock
once, and on Coder or Codespaces each is a session (an asleep box is still woken only with `--wake`)."""


def build_parser() -> argparse.ArgumentParser:
    """The command's parser (cli/parser.py)."""
    from workroom.cli.parser import build_parser as build

    return build()


def _dispatch(args: argparse.Namespace, face: Face) -> int | Coroutine[Any, Any, int] | None:
    """The command's work: an exit code, or a coroutine that gives one (run on the loop). None: no command."""
    import importlib

    if args.command not in COMMANDS or (args.command == "secret" and not args.secret_command):
        return None
    module = importlib.import_module(f"workroom.cli.{COMMANDS[args.command]}")
    result: int | Coroutine[Any, Any, int] = getattr(module, f"cmd_{args.command.replace('-', '_')}")(args, face)
    return result


def _failed(error: BaseException, args: argparse.Namespace, face: Face) -> int:
    """What a command that raised says, and its exit code."""
    from workroom.cli.face import Refused, say_error
    from workroom.core.errors import ExitCode, UserError

    as_json = bool(getattr(args, "json", False))
    if isinstance(error, UserError):
        say_error(error, face, as_json=as_json, name=getattr(args, "name", None))
        return int(error.exit_code)
    if isinstance(error, Refused):
        if as_json:
            import json

            face.out(json.dumps({"error": {"title": "Refused", "message": str(error), "hint": "",
                                           "exit_code": ExitCode.ERROR}}))
        else:
            face.err(f"workroom: {error}")
        return ExitCode.ERROR
    raise error


def main(argv: list[str] | None = None) -> int:
    """The `workroom` command (`argv` None: this process is the program; a list: called in-process, as tests do).

    While the app runs for this home, the command goes through it (`app_link`); else it runs here, and leaves
    nothing of ours running when it exits (docs/cli.md); `--help` is answered here.
    As the program, the cyclic garbage collector waits until start-up is over (it ran over the engine's
    import-time objects again and again: ~40 ms; `collect_from_now`), and a command that used the engine ends
    the process without the interpreter's teardown (`end_program`)."""
    if argv is None:
        try:
            return _main(None)
        except BrokenPipeError:  # `workroom status | head -1`: the reader has gone; nothing more to say
            return _pipe_closed()
    return _main(argv)


EXIT_PIPE_CLOSED = 141
"""What a shell says of a command ended by SIGPIPE (128 + 13): its reader closed the pipe."""


def _pipe_closed() -> int:
    """stdout's reader has gone: whatever is still buffered goes nowhere (so the interpreter's last flush does not
    fail with a traceback), and the command ends as a shell's own tools do."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_PIPE_CLOSED


def _main(argv: list[str] | None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given == ["--version"]:  # the commonest probe of a CLI: no parser
        print(f"workroom {__version__}")
        return 0
    if given and "-h" not in given and "--help" not in given:
        from workroom import app_link

        code = app_link.run_through_app(list(given))
        if code is not None:
            return code
    if argv is not None:
        return _run(argv)
    import gc

    from workroom.cli.face import collect_from_now, end_program

    gc.disable()
    code = _run(None)
    collect_from_now()
    if "workroom.sessions.engine" in sys.modules:
        end_program(code)
    return code


def _run(argv: list[str] | None) -> int:
    from workroom.cli.face import Face, Here
    from workroom.pydantic_plugins import skip_pydantic_plugins

    skip_pydantic_plugins()

    parser = build_parser()
    face = Face(Here())
    try:
        args = parser.parse_args(argv)  # --version and --help end here, having imported nothing heavy
    except SystemExit as done:
        return _unparsed(done, sys.argv[1:] if argv is None else argv, face)
    try:
        work = _dispatch(args, face)
        if work is None:
            parser.print_help()
            return 2
        if not isinstance(work, int):
            import asyncio

            return asyncio.run(_guarded(work, args, face))
        return work
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:  # a UserError in words (anything else is a bug, raised as it is)
        return _failed(error, args, face)


def _unparsed(done: SystemExit, argv: list[str], face: Face, *, raising: bool = True) -> int:
    """argparse ended the parse (a usage error, having said it on stderr, or --help): with `--json` a usage error
    is also said as JSON on stdout, as every path of a --json command is. In-process (tests) a parse that ended
    otherwise ends as argparse ends it."""
    from workroom.cli.face import usage

    code = done.code if isinstance(done.code, int) else 2
    if code == 2 and "--json" in argv:
        return usage(face, "the arguments could not be read (`workroom COMMAND --help` says what it takes)",
                     as_json=True)
    if raising:
        raise done
    return code


async def _guarded(work: Coroutine[Any, Any, int], args: argparse.Namespace, face: Face) -> int:
    try:
        return await work
    except Exception as error:
        return _failed(error, args, face)


_APP_PARSER: list[tuple[argparse.ArgumentParser, Says]] = []


def _app_parser() -> tuple[argparse.ArgumentParser, Says]:
    """The app's parser, made once (building argparse's tree of commands took ~5 ms a command)."""
    from workroom.cli.parser import Says
    from workroom.cli.parser import build_parser as build

    if not _APP_PARSER:
        says = Says()
        _APP_PARSER.append((build(says), says))
    return _APP_PARSER[0]


BUG_WORDS = "workroom: the app could not run this command; its log says why."


async def serve(argv: list[str], term: Terminal, engine: Engine | None, app: AppSide | None = None, *,
                bug_words: str = BUG_WORDS) -> int:
    """Run one `workroom` command in the app, against its engine (its sessions stay as they are: connected,
    listened to by the window), saying everything on `term`: the words and JSON of the same command without the
    app. Never raises: a bug is logged and said in one line (`bug_words`)."""
    import argparse

    from workroom.cli.face import Face

    face = Face(term, engine, app)
    parser, says = _app_parser()
    args = argparse.Namespace()
    says.term = term  # what argparse says while it parses (and the help, below) goes to this command
    try:
        args = parser.parse_args(argv)
        work = _dispatch(args, face)
        if work is None:
            parser.print_help()
            return 2
    except SystemExit as done:
        return _unparsed(done, argv, face, raising=False)
    except Exception as error:
        return _failed_in_app(error, args, face, argv, bug_words)
    finally:
        says.term = None
    if isinstance(work, int):
        return work
    try:
        return await _guarded(work, args, face)
    except Exception as error:
        return _failed_in_app(error, args, face, argv, bug_words)


def _failed_in_app(error: Exception, args: argparse.Namespace, face: Face, argv: list[str], bug_words: str) -> int:
    import logging

    try:
        return _failed(error, args, face)
    except Exception:
        logging.getLogger(__name__).exception("workroom %s failed", " ".join(argv[:2]))
        face.err(bug_words)
        return 1


if __name__ == "__main__":
    sys.exit(main())
