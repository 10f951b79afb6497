"""A command's surroundings: where its words go (this process's terminal, or the terminal of the `workroom`
process the app runs the command for), the engine it uses (the app's, or one of its own), and the hosts and
settings it reads and changes."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing`'s: the command's start imports nothing it does not use (docs/cli.md)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from contextlib import AbstractAsyncContextManager
    from pathlib import Path
    from typing import NoReturn, Protocol

    from workroom.core.app_settings import AppSettings
    from workroom.core.errors import UserError
    from workroom.core.hosts import HostsFile
    from workroom.sessions.engine import Engine

    class Terminal(Protocol):
        """Where a command's words go and its questions are asked: this process's own terminal, or the
        terminal of the `workroom` process the app runs the command for (`app_link.LinkTerminal`)."""

        cwd: str
        stdin_is_tty: bool

        def out(self, text: str) -> None: ...

        def err(self, text: str) -> None: ...

        async def ask(self, prompt: str, *, secret: bool = False) -> str | None: ...

    class AppSide(Protocol):
        """What only the running app can say or do, for `workroom app`."""

        @property
        def log_path(self) -> Path | None: ...

        def quit(self) -> None: ...


class Here:
    """This process's own terminal."""

    def __init__(self) -> None:
        import os

        self.cwd = os.getcwd()
        self.stdin_is_tty = sys.stdin is not None and sys.stdin.isatty()

    def out(self, text: str) -> None:
        print(text, flush=True)

    def err(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    async def ask(self, prompt: str, *, secret: bool = False) -> str | None:
        from workroom.app_link import ask_here

        return ask_here(prompt, secret)


class Face:
    """One command's surroundings: its terminal, and the app's engine when the app runs it (else the command
    makes an engine of its own, and closes it when it is done)."""

    def __init__(self, term: Terminal, engine: Engine | None = None, app: AppSide | None = None) -> None:
        self.term = term
        self.engine = engine
        self.app = app

    @property
    def in_app(self) -> bool:
        return self.engine is not None

    def out(self, text: str) -> None:
        self.term.out(text)

    def err(self, text: str) -> None:
        self.term.err(text)

    def engine_for(self, auto_reconnect: bool = False) -> AbstractAsyncContextManager[Engine]:
        """The engine for one command: the app's (left running), or one of this command's own (closed after)."""
        import contextlib

        @contextlib.asynccontextmanager
        async def engine() -> AsyncIterator[Engine]:
            if self.engine is not None:
                yield self.engine
                return
            made = make_engine(self, auto_reconnect)
            try:
                yield made
            finally:
                await made.close()

        return engine()

    def book(self) -> Book:
        return Book(self)


class Book:
    """The hosts and settings a command reads and changes: the app's engine's (the window shows a change at
    once), or the files themselves, each change a locked read-modify-write (storage.py)."""

    def __init__(self, face: Face) -> None:
        self.engine = face.engine
        if self.engine is None:
            from workroom.paths import app_paths
            from workroom.storage import load_hosts, load_settings

            self.paths = app_paths().ensure()
            hosts, settings = load_hosts(self.paths), load_settings(self.paths)
            for loaded in (hosts, settings):
                if loaded.problem is not None:
                    say_error(loaded.problem, face)
            self._hosts, self._settings = hosts.value, settings.value

    @property
    def hosts(self) -> HostsFile:
        return self.engine.hosts if self.engine is not None else self._hosts

    @property
    def settings(self) -> AppSettings:
        return self.engine.settings if self.engine is not None else self._settings

    def change_hosts(self, change: Callable[[HostsFile], HostsFile]) -> HostsFile:
        if self.engine is not None:
            self.engine.change_hosts(change)
            return self.engine.hosts
        from workroom.storage import update_hosts

        self._hosts = update_hosts(self.paths, change, fallback=self._hosts)
        return self._hosts

    def forget_host(self, name: str) -> None:
        if self.engine is not None:
            self.engine.forget_host(name)
        else:
            self.change_hosts(lambda hosts: hosts.remove(name))

    async def change_settings(self, changes: Mapping[str, object]) -> AppSettings:
        """Only these rows change, in settings.json as it is now; the app also hands the ceiling to every
        connected host, as its Apply does."""
        if self.engine is not None:
            await self.engine.apply_settings(changes)
            return self.engine.settings
        from workroom.storage import update_settings

        self._settings = update_settings(self.paths, lambda settings: settings.with_changes(changes),
                                         fallback=self._settings)
        return self._settings


class Refused(Exception):
    """A command refused in one plain line (exit 1), as `workroom: <words>`."""


def say_error(error: UserError, face: Face | None = None, *, as_json: bool = False, name: str | None = None) -> None:
    """An error (or the asleep answer) in words, or with `--json` as one JSON object on stdout: every path of a
    `--json` command says JSON. `name`: the host the command was about (advice that names a command uses it)."""
    import json

    from workroom.core.errors import BoxAsleep, Face

    out = face.out if face is not None else (lambda text: print(text, flush=True))
    err = face.err if face is not None else (lambda text: print(text, file=sys.stderr, flush=True))
    hint = error.advice(Face.CLI, name or "NAME")
    if as_json:
        extra = error.facts if isinstance(error, BoxAsleep) else None
        body = {"title": error.title, "message": error.message, "hint": hint, "exit_code": int(error.exit_code)}
        out(json.dumps({**extra, "answer": body} if isinstance(extra, dict) else {"error": body}))
        return
    if isinstance(error, BoxAsleep):  # an answer, not an error: one line, as the example reads
        out(f"{error.message}; {error.hint}")
        return
    err(f"workroom: {error.title}: {error.message}")
    if hint:
        err(f"  {hint}")


def usage(face: Face, words: str, *, as_json: bool) -> int:
    """A command used wrongly (exit 2): in words, or as JSON with `--json`."""
    import json

    from workroom.core.errors import ExitCode

    if as_json:
        face.out(json.dumps({"error": {"title": "Usage", "message": words, "hint": "", "exit_code": ExitCode.USAGE}}))
    else:
        face.err(f"workroom: {words}")
    return ExitCode.USAGE


def make_engine(face: Face, auto_reconnect: bool = False) -> Engine:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine

    paths = app_paths()
    # The agents' keys are not read from the keyring: the probe's answer gives them (providers/agent_keys.py).
    engine = Engine(paths, load_agent_bundle(paths), auto_reconnect=auto_reconnect, agent_keys_this_run_only=True)
    for problem in engine.problems:
        say_error(problem, face)
    collect_from_now()
    return engine


def collect_from_now() -> None:
    """The program's start-up is over (the engine is imported and built): its objects are kept for good, out of
    the collector's sight (`gc.freeze`), and the collector runs again from here (see `main`)."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def end_program(code: int) -> NoReturn:
    """End the `workroom` process without tearing the interpreter down: freeing the engine's modules (pydantic,
    asyncio, paramiko, cryptography) object by object took ~175 ms here, longer than a reconnect. The command
    is done by now (its engine closed, every file the app writes written, fsynced and renamed in place)."""
    import logging
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more to say there
            pass
    logging.shutdown()
    os._exit(code)
