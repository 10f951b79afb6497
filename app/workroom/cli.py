"""The `workroom` command line: the engine, headless.

While the desktop app runs, every command goes through it (`workroom.app_link`): the app runs the same command
here, in its own process against its own engine (`serve`), and the command prints what it says. Without the app
a command runs its own engine (`main`). Either way the words come from this module, through a `Terminal`.

Exit codes (documented in docs/cli.md): `core.errors.ExitCode`; an error's code is its type's
`UserError.exit_code`.
"""

from __future__ import annotations

import sys
import time

from workroom import __version__

# `workroom --version` and `--help` import nothing more than this (argparse and the version): asyncio, pydantic
# (core.errors), the engine and paramiko are imported by the commands that use them (docs/cli.md, start-up).
# Not even `typing` (mypy reads a module's own TYPE_CHECKING constant as typing's).
TYPE_CHECKING = False

if TYPE_CHECKING:  # the engine is imported only by the commands that need it (a fast `workroom --help`)
    import argparse
    from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
    from contextlib import AbstractAsyncContextManager
    from pathlib import Path
    from typing import Any, NoReturn, Protocol

    from workroom.core.app_settings import AppSettings
    from workroom.core.errors import BoxAsleep, UserError
    from workroom.core.hosts import Host, HostsFile
    from workroom.core.last_known import LastKnown
    from workroom.core.questions import HostKeyQuestion
    from workroom.core.setting_rows import SettingRow
    from workroom.sessions.engine import Engine
    from workroom.sessions.host_session import HostSession, HostSnapshot
    from workroom.this_computer import ThisComputer

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


EXIT_INTERRUPTED = 130
"""Ctrl-C: the shell's own code for a command ended by SIGINT."""


class _Here:
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
        if secret and self.stdin_is_tty:
            import getpass

            return getpass.getpass(prompt)
        if self.stdin_is_tty:
            try:
                return input(prompt)
            except EOFError:
                return None
        line = sys.stdin.readline()
        return line.rstrip("\n") if line else None


class _Face:
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
            made = _engine(self, auto_reconnect)
            try:
                yield made
            finally:
                await made.close()

        return engine()

    def book(self) -> _Book:
        return _Book(self)


class _Book:
    """The hosts and settings a command reads and changes: the app's engine's (the window shows a change at
    once), or the files themselves, each change a locked read-modify-write (storage.py)."""

    def __init__(self, face: _Face) -> None:
        self.engine = face.engine
        if self.engine is None:
            from workroom.paths import app_paths
            from workroom.storage import load_hosts, load_settings

            self.paths = app_paths().ensure()
            hosts, settings = load_hosts(self.paths), load_settings(self.paths)
            for loaded in (hosts, settings):
                if loaded.problem is not None:
                    _err(loaded.problem, face)
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


class _Providers:
    """The provider rows, read from core.provider_specs (pydantic) only when argparse needs them: to check a
    `--provider` value or to print `hosts add --help`. `workroom --help` stays light."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        from workroom.core.provider_specs import PROVIDER_SPECS

        return iter(PROVIDER_SPECS)

    def __contains__(self, kind: object) -> bool:
        return kind in list(self)


class _LaterText:
    """An argparse help text made when the help is printed (argparse formats it with `%`)."""

    def __init__(self, make: Callable[[], str]) -> None:
        self._make = make

    def __mod__(self, _params: object) -> str:
        return self._make()

    def strip(self, chars: str | None = None) -> str:
        """argparse (3.11.7 and later) asks whether the help is blank before formatting it."""
        return self._make().strip(chars)


def _provider_help() -> str:
    from workroom.core.provider_specs import PROVIDER_SPECS

    return "; ".join(f"{kind}: {spec.summary}" for kind, spec in PROVIDER_SPECS.items())


def _reference_help() -> str:
    from workroom.core.provider_specs import PROVIDER_SPECS

    return ("the provider's reference to the machine, field by field ("
            + "; ".join(f"{kind}: {', '.join(f.name for f in spec.reference)}"
                        for kind, spec in PROVIDER_SPECS.items() if spec.reference)
            + "); a bare VALUE is the provider's first field")


HOST_FLAGS = {"name": "NAME", "provider": "--provider", "address": "--host", "port": "--port", "user": "--user",
              "identity": "--identity", "idle_window_seconds": "--idle-window", "agent_candidates": "--candidates",
              "reference": "--ref", "hourly_price": "PRICE"}
"""A host's field as the person typed it on the command line (`hosts add`, `hosts edit`, `hosts price`)."""


class _Says:
    """Where the app's parser says what it says: the terminal of the command being parsed (the app parses one
    command at a time, on its loop's thread)."""

    term: Terminal | None = None


def _parser_class(says: _Says | None) -> type[argparse.ArgumentParser]:
    """argparse's parser, saying what it says (usage, help, a refused argument) on the terminal of the command
    the app is parsing, and ending the parse with SystemExit as argparse does."""
    import argparse

    if says is None:
        return argparse.ArgumentParser
    where: _Says = says

    class Parser(argparse.ArgumentParser):
        def _print_message(self, message: str, file: Any = None) -> None:
            if message and where.term is not None:
                (where.term.err if file is sys.stderr else where.term.out)(message.rstrip("\n"))

        def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
            if message and where.term is not None:
                where.term.err(message.rstrip("\n"))
            raise SystemExit(status)

    return Parser


def build_parser(says: _Says | None = None) -> argparse.ArgumentParser:
    parser = _parser_class(says)(prog="workroom", description="Workroom companion, headless.")
    parser.add_argument("--version", action="version", version=f"workroom {__version__}")
    sub = parser.add_subparsers(dest="command")

    hosts = sub.add_parser("hosts", help="add, edit, list and remove hosts").add_subparsers(dest="hosts_command")
    add = hosts.add_parser("add", help="add a host (its name is its workroom)")
    add.add_argument("name")
    _host_flags(add, provider_required=True)
    edit = hosts.add_parser("edit", help="change a host's settings: only the flags given change "
                                         "(an empty value clears --host, --user, --identity, --idle-window)")
    edit.add_argument("name")
    _host_flags(edit, provider_required=False)
    hosts.add_parser("list", help="list hosts").add_argument("--json", action="store_true")
    rm = hosts.add_parser("remove", help="remove a host")
    rm.add_argument("name")
    rm.add_argument("--uninstall", action="store_true",
                    help="first stop the agent on the host and remove it (an asleep box is woken only with --wake, "
                         "or when you say yes)")
    rm.add_argument("--json", action="store_true")
    _wake_flag(rm)

    connect = sub.add_parser("connect", help="connect to a host: push the agent if needed, subscribe, print status")
    connect.add_argument("name")
    connect.add_argument("--trust-new-host-key", action="store_true",
                         help="trust a host key seen for the first time (a changed key is always refused)")
    connect.add_argument("--watch", action="store_true", help="keep printing status changes until interrupted")
    connect.add_argument("--json", action="store_true")
    connect.add_argument("--timeout", type=float, default=60.0)
    _wake_flag(connect)

    status = sub.add_parser("status", help="status of every host (sleeping boxes are not woken)")
    status.add_argument("--json", action="store_true")
    status.add_argument("--watch", action="store_true", help="live view: keep printing changes")

    _settings_parser(sub, type(parser))

    secret = sub.add_parser("secret", help="SSH passphrases and passwords, kept only in the system keyring")
    secret_sub = secret.add_subparsers(dest="secret_command")
    for verb in ("set", "delete"):
        sp = secret_sub.add_parser(verb)
        which = sp.add_mutually_exclusive_group(required=True)
        which.add_argument("--passphrase", metavar="KEY_FILE", help="the passphrase of this private key file")
        which.add_argument("--password", metavar="USER@HOST:PORT", help="the SSH password of this login")

    keep = sub.add_parser("keep", help="answer a ceiling prompt: keep the box awake")
    keep.add_argument("name")
    keep.add_argument("--json", action="store_true")
    _wake_flag(keep)
    let_sleep = sub.add_parser("let-sleep", help="answer a ceiling prompt: let the box sleep now")
    let_sleep.add_argument("name")
    let_sleep.add_argument("--json", action="store_true")

    why = sub.add_parser("why", help="what kept a host awake: its agent's record, in words")
    why.add_argument("name")
    why.add_argument("--since", default="24h", help="how far back: 24h (default), 90m, 2d ... (at most 7d)")
    why.add_argument("--json", action="store_true")
    _wake_flag(why)
    never = sub.add_parser("exclusions", help="process names that never count as work on a host")
    never.add_argument("name")
    never.add_argument("--add", action="append", default=[], metavar="PROCESS", help="e.g. watch (repeatable)")
    never.add_argument("--remove", action="append", default=[], metavar="PROCESS")
    never.add_argument("--json", action="store_true")
    _wake_flag(never)
    price = hosts.add_parser("price", help="the provider's hourly price, for the estimated cost in `why`")
    price.add_argument("name")
    price.add_argument("price", help="a number per hour, or 'none'")

    app = sub.add_parser("app", help="the desktop app: is it running, and quit it").add_subparsers(
        dest="app_command")
    app.add_parser("status", help="is the app running: its version, process and log").add_argument(
        "--json", action="store_true")
    app.add_parser("quit", help="quit the app (as its Quit does: every session closed first)")
    return parser


def _host_flags(command: argparse.ArgumentParser, *, provider_required: bool) -> None:
    command.add_argument("--provider", required=provider_required, choices=_Providers(), metavar="PROVIDER",
                         help=_LaterText(_provider_help))  # type: ignore[arg-type]
    command.add_argument("--host", dest="address")
    command.add_argument("--port", type=int)
    command.add_argument("--user")
    command.add_argument("--identity", help="private key file (it must exist)")
    command.add_argument("--idle-window", help="seconds the provider lets the box idle")
    command.add_argument("--candidates", choices=["all", "user"], help="which processes count as work")
    command.add_argument("--ref", dest="reference", action="append", default=None, metavar="[FIELD=]VALUE",
                         help=_LaterText(_reference_help))  # type: ignore[arg-type]


def _settings_parser(sub: Any, base: type[argparse.ArgumentParser]) -> None:
    """`workroom settings get|set`: one flag of `set` per row of core.setting_rows, made when `set` is parsed or
    its help printed (`workroom --help` imports no rows)."""

    class LaterFlags(base):  # type: ignore[valid-type,misc]
        later: Callable[[argparse.ArgumentParser], None] | None = None

        def _ready(self) -> None:
            make, self.later = self.later, None
            if make is not None:
                make(self)

        def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
            self._ready()
            return super().parse_known_args(*args, **kwargs)

        def format_help(self) -> str:
            self._ready()
            return str(super().format_help())

    settings = sub.add_parser("settings", help="every setting: the awake ceiling, notifications, this computer")
    verbs = settings.add_subparsers(dest="settings_command", parser_class=LaterFlags)
    verbs.add_parser("get", help="every setting, its value and bounds").add_argument("--json", action="store_true")
    verbs.add_parser("set", help="change the settings named; every other keeps its value").later = _setting_flags


def _setting_flags(parser: argparse.ArgumentParser) -> None:
    from workroom.core.setting_rows import Store, rows_in

    for row in rows_in(*Store):
        _setting_flag(parser, row)


def _on_off(text: str) -> bool:
    import argparse

    words = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}
    if text.lower() not in words:
        raise argparse.ArgumentTypeError(f"say on or off, not {text!r}")
    return words[text.lower()]


def _setting_flag(parser: argparse.ArgumentParser, row: SettingRow) -> None:
    """The `settings set` flag of one row (a yes/no row also gets `--no-<flag>`). Unset flags stay None."""
    from workroom.core.setting_rows import Kind

    flag, where = f"--{row.flag}", f"{row.store.applies_to}"
    if row.kind is Kind.DURATION:
        parser.add_argument(flag, dest=row.name, type=float, metavar="SECONDS",
                            help=f"{row.words}, in seconds ({row.bounds_words()}); {where}")
    elif row.kind is Kind.YES_NO:
        both = parser.add_mutually_exclusive_group()
        both.add_argument(flag, dest=row.name, nargs="?", const=True, type=_on_off, metavar="on|off",
                          help=f"{row.words}: on or off (the flag alone: on); {where}")
        both.add_argument(f"--no-{row.flag}", dest=row.name, action="store_const", const=False, default=None,
                          help=f"the same as {flag} off")
    else:
        empty = f" (empty: {row.empty})" if row.empty else ""
        parser.add_argument(flag, dest=row.name, metavar="TEXT", help=f"{row.words}{empty}; {where}")


def _wake_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument("--wake", action="store_true",
                         help="wake the box if its provider says it is asleep (otherwise it is left asleep and "
                              "the command answers from what is known, exit 9)")


WAKE_DOING = {"connect": "connect", "keep": "keep it awake", "why": "read its record",
              "exclusions": "read or change what never counts as work"}
"""Per command that takes --wake: what it does once the box is awake (the asleep answer's last words)."""


def _clock(unix: float | None) -> str:
    import datetime

    return "" if unix is None else datetime.datetime.fromtimestamp(unix).strftime("%H:%M")


def asleep_words(engine: Engine, name: str) -> str:
    """"box2 is asleep (since 14:02); last known busy (2 min ago)", from the one record every face reads
    (core.last_known)."""
    known = engine.last_known(name)
    since = f" (since {_clock(known.asleep_since)})" if known.asleep_since is not None else ""
    words = f"{name} is asleep{since}"
    return words + ("; " + known.words(time.time()) if known.known else "; nothing known of it yet")


def _last_known_json(known: LastKnown) -> dict[str, Any]:
    return {"verdict": known.doing, "reported": known.reported, "since": known.since, "seen_at": known.seen_at,
            "asleep_since": known.asleep_since}


def _asleep(engine: Engine, name: str, command: str) -> BoxAsleep:
    from workroom.core.errors import BoxAsleep

    answer = BoxAsleep("Asleep", asleep_words(engine, name),
                       f"`workroom {command} {name} --wake` to wake it and {WAKE_DOING[command]}.")
    answer.facts = {"name": name, "asleep": True, "last_known": _last_known_json(engine.last_known(name))}
    return answer


def _err(error: UserError, face: _Face | None = None, *, as_json: bool = False, name: str | None = None) -> None:
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


def _usage(face: _Face, words: str, *, as_json: bool) -> int:
    """A command used wrongly (exit 2): in words, or as JSON with `--json`."""
    import json

    from workroom.core.errors import ExitCode

    if as_json:
        face.out(json.dumps({"error": {"title": "Usage", "message": words, "hint": "", "exit_code": ExitCode.USAGE}}))
    else:
        face.err(f"workroom: {words}")
    return ExitCode.USAGE


def _engine(face: _Face, auto_reconnect: bool = False) -> Engine:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine

    paths = app_paths()
    engine = Engine(paths, load_agent_bundle(paths), auto_reconnect=auto_reconnect)
    for problem in engine.problems:
        _err(problem, face)
    _collect_from_now()
    return engine


def _collect_from_now() -> None:
    """The program's start-up is over (the engine is imported and built): its objects are kept for good, out of
    the collector's sight (`gc.freeze`), and the collector runs again from here (see `main`)."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _end_program(code: int) -> NoReturn:
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


def _snapshot_json(snap: HostSnapshot) -> dict[str, Any]:
    from workroom.core.errors import Face

    b = snap.badge(time.monotonic(), Face.CLI)
    out: dict[str, Any] = {
        "name": snap.host.name,
        "provider": snap.host.provider,
        "connection": snap.connection.state.value,
        "badge": {"kind": b.kind.value, "label": b.label, "tooltip": b.tooltip, "offers_keep": b.offers_keep},
        "status": snap.status.model_dump(mode="json") if snap.status else None,
        "error": snap.connection.error.model_dump() if snap.connection.error else None,
        "wake_seconds": snap.connection.wake_seconds,
    }
    if snap.install is not None:
        out["pushed_bytes"] = snap.install.pushed_bytes
        out["install_action"] = snap.install.action
    if snap.status is not None:
        out["build"] = snap.status.agent.build
    out["keep_awake"] = _keep_awake_json(snap.connection.heartbeat_proof, time.monotonic())
    return out


def _keep_awake_json(proof: Any, now: float) -> dict[str, Any]:
    """Is the keep-awake seen by the provider? `confirmed` is null when it cannot be known (docs/cli.md)."""
    if proof is None:
        return {"confirmed": None, "state": None, "why": None, "provider_last_seen_age_seconds": None,
                "provider_idle_window_seconds": None}
    age = proof.last_seen_age(now)
    return {"confirmed": proof.confirmed, "state": proof.state.value, "why": proof.why,
            "provider_last_seen_age_seconds": None if age is None else round(age, 1),
            "provider_idle_window_seconds": proof.window_seconds}


NAME_COLUMN = 20


def _snapshot_line(snap: HostSnapshot) -> str:
    """One host: its badge, connection and what keeps it busy, in the words the app uses (core.busy_reasons)."""
    from workroom.core.badge import agent_clock
    from workroom.core.busy_reasons import reason_words
    from workroom.core.errors import ERROR_KINDS, Face
    from workroom.core.text_width import pad

    now = time.monotonic()
    b = snap.badge(now, Face.CLI)
    status = snap.status
    words = reason_words(status, agent_now=agent_clock(status, snap.connection, now)) if status else []
    line = f"{pad(snap.host.name, NAME_COLUMN)} {b.label:<28} {snap.connection.state.value:<12}"
    if words:
        line += " " + "; ".join(words[:3])
    error = snap.connection.error
    if error is not None and b.spec.shows_error:
        kind = ERROR_KINDS.get(error.kind)
        advice = error.advice(Face.CLI, snap.host.name) if kind is not None and Face.CLI in kind.advice else ""
        line += f"  ({error.message}{'; ' + advice if advice else ''})"
    return line


# -- connecting, and answering for an asleep box ---------------------------------------------------------------


async def _reach(engine: Engine, session: HostSession, command: str, *, wake: bool, timeout: float) -> HostSnapshot:
    """The host's session, connected for a command: at once when it is live (the app's usually is); a box its
    provider says is asleep (or cannot be read) is left so unless `wake`, and answered for from what is known
    (`BoxAsleep`, exit 9) without a word to the box or its provider; otherwise a connect (waking only with `wake`)."""
    from workroom.core.connection import ConnectionState

    state = session.connection.state
    if session.connection.spec.live:
        return session.snapshot()
    if state in (ConnectionState.ASLEEP, ConnectionState.UNREADABLE) and not wake:
        if state is ConnectionState.UNREADABLE and session.connection.error is not None:
            raise session.failure or _unreadable(session)
        raise _asleep(engine, session.host.name, command)
    if state is ConnectionState.BACKING_OFF:  # the person asked now: no waiting out the back-off
        await session.disconnect()
    snap = await session.connect(timeout=timeout, wake=wake)
    if snap.connection.state is ConnectionState.ASLEEP:
        raise _asleep(engine, session.host.name, command)
    return snap


def _unreadable(session: HostSession) -> UserError:
    from workroom.core.errors import UserError

    error = session.connection.error
    assert error is not None
    return UserError(error.title, error.message, error.hint)


class _NeverSleeps(Exception):
    """The command changes something only on a box that sleeps, and this host never does."""


def _connected(face: _Face, name: str, command: str, wake: bool = False, *,
               only_if_it_sleeps: bool = False) -> AbstractAsyncContextManager[HostSession]:
    """A session to host `name`, connected, for one command: the app's own session when the app runs the command
    (it stays connected), else one of the command's own engine (closed when the command is done).

    A box its provider says is asleep is left asleep unless `wake`: then `BoxAsleep` (exit 9) answers from
    what the app last knew. Where the provider cannot tell, it connects. `only_if_it_sleeps`: raise
    `_NeverSleeps` before connecting to a host that never sleeps."""
    import contextlib  # here, not at the top: `workroom --version` imports nothing it does not use

    @contextlib.asynccontextmanager
    async def connected() -> AsyncIterator[HostSession]:
        async with face.engine_for() as engine:
            session = engine.session(name)
            if only_if_it_sleeps and not session.traits.sleeps_when_idle:
                raise _NeverSleeps(name)
            await _reach(engine, session, command, wake=wake, timeout=30)
            yield session

    return connected()


# -- commands -----------------------------------------------------------------------------------------------------


async def _cmd_connect(args: argparse.Namespace, face: _Face) -> int:
    import asyncio
    import json

    from workroom.core.errors import ExitCode

    async with face.engine_for() as engine:
        session = engine.session(args.name)

        async def answer(_session: HostSession, question: HostKeyQuestion) -> bool:
            if args.trust_new_host_key:
                face.err(f"workroom: trusting new host key {question.fingerprint}")
                return True
            return False

        asked_before, session.host_key_answerer = session.host_key_answerer, answer
        try:
            snap = await _reach(engine, session, "connect", wake=args.wake, timeout=args.timeout)
        finally:
            session.host_key_answerer = asked_before
        face.out(json.dumps(_snapshot_json(snap)) if args.json else _snapshot_line(snap))
        if args.watch:
            def show(s: HostSnapshot) -> None:
                face.out(json.dumps(_snapshot_json(s)) if args.json else _snapshot_line(s))

            session.listeners.append(show)
            if not face.in_app:
                session.auto_reconnect = True
            try:
                await asyncio.get_running_loop().create_future()
            finally:
                session.listeners.remove(show)
        return ExitCode.OK


async def _cmd_status(args: argparse.Namespace, face: _Face) -> int:
    """Every host's line. The app's engine answers from what it holds (it owns the connections); a command's own
    engine connects to each host (waking none), each on its own deadline, and prints each line as it comes: a
    host that never answers holds no one else's line and comes last, saying why."""
    import asyncio
    import json

    from workroom.core.errors import ExitCode, UserError

    def show(engine: Engine, snap: HostSnapshot) -> None:
        face.out(json.dumps(_with_last_known(engine, snap)) if args.json else _status_line(engine, snap))

    async with face.engine_for(auto_reconnect=args.watch) as engine:
        if face.in_app:
            snaps = engine.snapshots()
            if args.json:
                face.out(json.dumps([_with_last_known(engine, s) for s in snaps]))
            else:
                for snap in snaps:
                    show(engine, snap)
        else:
            async def one(name: str) -> HostSnapshot:
                session = engine.session(name)
                try:
                    return await session.connect(timeout=30)  # never wakes an asleep box: its row says so
                except UserError:
                    return session.snapshot()

            tasks = [asyncio.ensure_future(one(n)) for n in engine.hosts.names()]
            try:
                if args.json:
                    snaps = await asyncio.gather(*tasks)
                    face.out(json.dumps([_with_last_known(engine, s) for s in snaps]))
                else:
                    for done in asyncio.as_completed(tasks):
                        show(engine, await done)
            finally:
                for task in tasks:
                    task.cancel()
        if args.watch:  # then one line per change: with --json, each a JSON object (the stream is JSON Lines)
            def changed(snap: HostSnapshot) -> None:
                show(engine, snap)

            engine.listeners.append(changed)
            try:
                await asyncio.get_running_loop().create_future()
            finally:
                engine.listeners.remove(changed)
        return ExitCode.OK


def _status_line(engine: Engine, snap: HostSnapshot) -> str:
    from workroom.core.connection import ConnectionState

    line = _snapshot_line(snap)
    if snap.connection.state is ConnectionState.ASLEEP:
        line += f"  ({asleep_words(engine, snap.host.name)}; not woken)"
    return line


def _with_last_known(engine: Engine, snap: HostSnapshot) -> dict[str, Any]:
    return {**_snapshot_json(snap), "last_known": _last_known_json(engine.last_known(snap.host.name))}


async def _cmd_keep(args: argparse.Namespace, face: _Face) -> int:
    import json

    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    try:
        async with _connected(face, args.name, "keep", args.wake, only_if_it_sleeps=True) as session:
            status = await session.call(Method.KEEP)
            face.out(json.dumps({"name": args.name, "kept": True, "awake_seconds": status.awake_seconds})
                     if args.json else
                     f"{args.name}: kept awake; ceiling restarted (awake {status.awake_seconds:.0f} s)")
            return ExitCode.OK
    except _NeverSleeps:  # Keep awake only where it changes something
        face.out(json.dumps({"name": args.name, "kept": False, "never_sleeps": True}) if args.json else
                 f"{args.name} never sleeps, so there is nothing to keep awake (its awake ceiling is only a note); "
                 "nothing was sent to it.")
        return ExitCode.OK


async def _cmd_let_sleep(args: argparse.Namespace, face: _Face) -> int:
    """Never wakes: an asleep box is already what the user asked for."""
    import json

    from workroom.core.errors import BoxAsleep, ExitCode
    from workroom.core.protocol import Method

    async with face.engine_for() as engine:
        session = engine.session(args.name)
        if not session.traits.sleeps_when_idle:
            raise _Refused(f"{args.name} never sleeps, so there is nothing to let sleep.")
        try:
            await _reach(engine, session, "connect", wake=False, timeout=30)
        except BoxAsleep:
            face.out(json.dumps({"name": args.name, "asleep": True, "suppressed": True,
                                 "last_known": _last_known_json(engine.last_known(args.name))}) if args.json
                     else f"{asleep_words(engine, args.name)}: already what you asked for; nothing sent.")
            return ExitCode.OK
        status = await session.call(Method.LET_SLEEP)
        if args.json:
            face.out(json.dumps({"name": args.name, "asleep": False, "suppressed": status.suppressed}))
        elif status.suppressed:
            face.out(f"{args.name}: let sleep; its agent no longer keeps it awake, so it sleeps within its idle "
                     "window")
        else:
            face.out(f"{args.name}: idle already; nothing keeps it awake")
        return ExitCode.OK


class _Refused(Exception):
    """A command refused in one plain line (exit 1), as `workroom: <words>`."""


async def _cmd_why(args: argparse.Namespace, face: _Face) -> int:
    import json

    from workroom.core import timeline as tl
    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    try:
        window = tl.parse_since(args.since)
    except ValueError as error:
        return _usage(face, f"--since: {error}", as_json=args.json)
    async with _connected(face, args.name, "why", args.wake) as session:
        # Asked from a little earlier than the window, in case the box's clock runs ahead of ours.
        reply = await session.call(Method.TIMELINE, since=time.time() - window - 3600)
        summary = tl.summarise(reply, window)
        period = tl.period_words(window)
        cost = tl.cost_words(summary, session.host.hourly_price)
        if args.json:
            face.out(json.dumps({
                "name": session.host.name, "since_seconds": window, "now": summary.end,
                "headline": summary.headline(period), "awake_seconds": summary.awake_seconds,
                "up_seconds": summary.up_seconds, "totals": {k.value: v for k, v in summary.totals.items()},
                "activities": [{"activity": what, "seconds": sec} for what, sec in summary.activities],
                "segments": [{"start": g.start, "end": g.end, "kind": g.kind.value, "words": g.words,
                              "class": g.reason_class, "subject": g.subject, "peer": g.peer, "port": g.port,
                              "local_port": g.local_port} for g in summary.segments],
                "hourly_price": session.host.hourly_price, "cost": cost, "problem": summary.problem,
            }))
            return ExitCode.OK
        face.out(f"{session.host.name}: {summary.headline(period)}")
        others = summary.other_lines()
        if others:
            face.out("  " + ", ".join(others))
        face.out(f"  [{tl.text_strip(summary)}]  ({tl.STRIP_LEGEND})")
        if cost:
            face.out(f"  cost {cost}")
        if summary.problem:
            face.out(f"  note: {summary.problem}")
        return ExitCode.OK


async def _cmd_exclusions(args: argparse.Namespace, face: _Face) -> int:
    """Read the host's "never work" names, or change them by what was added and removed (the agent applies both
    to the list it holds then: a change made meanwhile elsewhere is kept)."""
    import json

    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    async with _connected(face, args.name, "exclusions", args.wake) as session:
        if args.add or args.remove:
            current = await session.call(Method.EXCLUSIONS, add=list(args.add), remove=list(args.remove))
        else:
            current = await session.call(Method.EXCLUSIONS)
        if args.json:
            face.out(json.dumps({"name": session.host.name, "never_work": list(current.names),
                                 "problem": current.problem}))
        else:
            listed = ", ".join(current.names) if current.names else "nothing"
            face.out(f"{session.host.name}: never work: {listed}")
            if current.problem:
                face.out(f"  note: {current.problem}")
        return ExitCode.OK


async def _remove_uninstalling(args: argparse.Namespace, face: _Face) -> int:
    """Stop the host's agent, remove it from the box, then forget the host. Reaching the box wakes it: on one its
    provider says is asleep (or cannot say) that needs `--wake`, or a yes at a terminal."""
    import json

    from workroom.core.errors import BoxAsleep, ExitCode, UserError

    async with face.engine_for() as engine:
        host = engine.hosts.require(args.name)
        name = host.name
        if not args.wake and await _may_be_asleep(engine, host):
            wake = face.term.stdin_is_tty and not args.json and _yes(await face.term.ask(
                f"{name} is asleep (or its provider cannot say): uninstalling its agent wakes it. "
                "Wake it and uninstall? [y/N] "))
            if not wake:
                refusal = BoxAsleep("Asleep", f"{asleep_words(engine, name)}; it was not woken, and nothing was "
                                              "removed",
                                    f"`workroom hosts remove {name} --uninstall --wake` wakes it, stops and removes "
                                    f"its agent and forgets it; `workroom hosts remove {name}` only forgets it.")
                refusal.facts = {"name": name, "asleep": True, "removed": False,
                                "last_known": _last_known_json(engine.last_known(name))}
                raise refusal
        try:
            report = await engine.remove_host(name, uninstall=True)
        except UserError as error:
            _err(error, face, as_json=args.json, name=name)
            if not args.json:
                face.err(f"workroom: {name} was not removed (its agent may still run there); "
                         f"`workroom hosts remove {name}` removes it anyway")
            return int(error.exit_code)
        assert report is not None
        if args.json:
            face.out(json.dumps({"name": name, "removed": True, "uninstalled": report.words(),
                                 "problems": list(report.problems)}))
        else:
            face.out(f"removed {name}; on the host: {report.words()}")
            for problem in report.problems:
                face.out(f"  note: {problem}")
        return ExitCode.OK


def _yes(answer: str | None) -> bool:
    return (answer or "").strip().lower() in ("y", "yes")


async def _may_be_asleep(engine: Engine, host: Host) -> bool:
    """Whether the box is asleep, or its provider should say and cannot: read without waking it (the app's
    session's word when it has one)."""
    from workroom.core.connection import ConnectionState
    from workroom.providers.base import BoxState

    session = engine.sessions.get(host.name)
    if session is not None and session.connection.state is not ConnectionState.DISCONNECTED:
        return session.connection.state in (ConnectionState.ASLEEP, ConnectionState.UNREADABLE)
    try:
        return await engine.provider_for(host).box_state(host) is BoxState.ASLEEP
    except Exception:  # a provider that should say and cannot: it may be asleep
        return host.traits.sleeps_when_idle


def _cmd_hosts(args: argparse.Namespace, face: _Face) -> int | Coroutine[Any, Any, int]:
    import json

    from workroom.core.errors import ExitCode

    as_json = getattr(args, "json", False)
    if args.hosts_command == "remove" and args.uninstall:
        return _remove_uninstalling(args, face)
    if args.hosts_command not in ("add", "edit", "remove", "price", "list"):
        face.err("workroom hosts: add, edit, list, price or remove")
        return ExitCode.USAGE
    book = face.book()
    if args.hosts_command == "add":
        made = _host_from_flags(args, face)
        if isinstance(made, int):
            return made
        host: Host = made
        book.change_hosts(lambda hosts: hosts.add(host))
        face.out(f"added {host.name} ({host.provider})")
    elif args.hosts_command == "edit":
        changes = _host_changes(args, face, book.hosts.require(args.name))
        if isinstance(changes, int):
            return changes
        try:
            book.change_hosts(lambda hosts: hosts.edit(args.name, _edited(hosts.require(args.name), changes)))
        except ValueError as error:
            return _refused_host(face, error)
        face.out(f"changed {args.name}: {', '.join(_changed_flags(changes))}")
    elif args.hosts_command == "remove":
        name = book.hosts.require(args.name).name
        book.forget_host(name)
        if as_json:
            face.out(json.dumps({"name": name, "removed": True, "uninstalled": None}))
        else:
            face.out(f"removed {name}; its agent, if one runs there, keeps running "
                     f"(`workroom hosts remove NAME --uninstall` stops and removes it)")
    elif args.hosts_command == "price":
        try:
            value = None if args.price.lower() in ("none", "off", "") else float(args.price)
            priced = book.change_hosts(lambda hosts: hosts.edit(args.name, _edited(
                hosts.require(args.name), {"hourly_price": value}))).require(args.name)
        except ValueError:
            face.err(f"workroom: the hourly price must be a number from 0 to 100000, or none (got {args.price!r})")
            return ExitCode.USAGE
        face.out(f"{priced.name}: hourly price {'not set' if value is None else f'{value:g}'}")
    else:
        _list_hosts(face, book.hosts, as_json=as_json)
    return ExitCode.OK


def _list_hosts(face: _Face, hosts: HostsFile, *, as_json: bool) -> None:
    import json

    from workroom.core.text_width import pad

    if as_json:
        face.out(json.dumps([h.model_dump(mode="json") for h in hosts.hosts]))
        return
    for h in hosts.hosts:
        where = f"{h.user + '@' if h.user else ''}{h.address or ''}{':' + str(h.port) if h.port else ''}"
        face.out(f"{pad(h.name, NAME_COLUMN)} {h.provider:<16} {where}".rstrip())


def _identity(face: _Face, given: str) -> str:
    """`--identity` as stored: a path from the home (`~/...`) kept so, any other made absolute from the folder the
    command was typed in; a file that is not there is refused now, not at the first connect."""
    import os

    from workroom.core.errors import UserError

    stored = given if given.startswith("~") or os.path.isabs(given) else os.path.join(face.term.cwd, given)
    if not os.path.isfile(os.path.expanduser(stored)):
        raise _BadFlag(UserError("No such key file", f"--identity: {stored} is not a file.",
                                 "Give the path of the private key to log in with (ssh-keygen makes one)."))
    return stored


class _BadFlag(Exception):
    """A host flag refused: its UserError (exit 2)."""

    def __init__(self, error: UserError) -> None:
        super().__init__(error.message)
        self.error = error


def _flag_values(args: argparse.Namespace, face: _Face, provider: str) -> dict[str, Any]:
    """The host fields given as flags (an empty --host, --user, --identity or --idle-window clears it)."""
    from workroom.core.hosts import IdentityRef
    from workroom.core.provider_specs import spec_for

    values: dict[str, Any] = {}
    for field in ("address", "user"):
        given = getattr(args, field)
        if given is not None:
            values[field] = given or None
    if args.port is not None:
        values["port"] = args.port
    if args.identity is not None:
        values["identity"] = IdentityRef.file(_identity(face, args.identity)) if args.identity else None
    if args.idle_window is not None:
        values["idle_window_seconds"] = _seconds("--idle-window", args.idle_window) if args.idle_window else None
    if args.candidates is not None:
        values["agent_candidates"] = args.candidates
    if args.reference is not None:
        values["reference"] = spec_for(provider).reference_from_args(args.reference)
    return values


def _seconds(flag: str, text: str) -> float:
    from workroom.core.errors import UserError

    try:
        return float(text)
    except ValueError:
        raise _BadFlag(UserError("Not a number", f"{flag}: say a number of seconds, not {text!r}.", "")) from None


def _host_from_flags(args: argparse.Namespace, face: _Face) -> Host | int:
    from workroom.core.hosts import Host

    try:
        return Host(name=args.name, provider=args.provider, **_flag_values(args, face, args.provider))
    except _BadFlag as bad:
        return _refused_flag(face, bad.error)
    except ValueError as error:
        return _refused_host(face, error)


def _host_changes(args: argparse.Namespace, face: _Face, host: Host) -> dict[str, Any] | int:
    try:
        changes = _flag_values(args, face, args.provider or host.provider)
    except _BadFlag as bad:
        return _refused_flag(face, bad.error)
    except ValueError as error:
        return _refused_host(face, error)
    if args.provider is not None:
        changes["provider"] = args.provider
    if not changes:
        return _usage(face, f"hosts edit {args.name}: nothing to change (give the flags to change, as for "
                            "`hosts add`)", as_json=False)
    return changes


def _edited(host: Host, changes: Mapping[str, Any]) -> Host:
    from workroom.core.hosts import Host

    return Host.model_validate({**host.model_dump(), **changes})


def _changed_flags(changes: Mapping[str, Any]) -> list[str]:
    return [f"{HOST_FLAGS.get(field, field)} {'cleared' if value is None else _flag_value(value)}"
            for field, value in changes.items()]


def _flag_value(value: Any) -> str:
    if hasattr(value, "value"):  # an IdentityRef
        return str(value.value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _refused_flag(face: _Face, error: UserError) -> int:
    from workroom.core.errors import ExitCode

    _err(error, face, as_json=False)
    return ExitCode.USAGE


def _refused_host(face: _Face, error: ValueError) -> int:
    """A host value refused, naming the flag typed (never pydantic's own message)."""
    from pydantic import ValidationError

    from workroom.core.errors import ExitCode, UserError
    from workroom.core.refusals import refusal_words

    if isinstance(error, UserError):
        raise error
    words = refusal_words(error, HOST_FLAGS) if isinstance(error, ValidationError) else str(error)
    face.err(f"workroom: invalid host: {words}")
    return ExitCode.USAGE


async def _cmd_settings(args: argparse.Namespace, face: _Face) -> int:
    """`get` lists every row with its value and bounds; `set` changes only the rows whose flags were given
    (checked first, each refusal naming the flag), in settings.json or, for open at login, in the system."""
    from workroom.core.errors import ExitCode
    from workroom.paths import profile_env
    from workroom.this_computer import ThisComputer

    if args.settings_command not in ("get", "set"):
        face.err("workroom settings: get or set")
        return ExitCode.USAGE
    book = face.book()
    here = ThisComputer.here(profile_env())
    settings = book.settings
    names = None
    if args.settings_command == "set":
        settings, names = await _set_settings(args, here, book)
    _print_settings(face, here, settings, names, as_json=getattr(args, "json", False))
    return ExitCode.OK


async def _set_settings(args: argparse.Namespace, here: ThisComputer,
                        book: _Book) -> tuple[AppSettings, set[str] | None]:
    """Check every flag given, then store them: the new settings, and the names changed (None: no flag)."""
    from workroom.core.errors import UserError
    from workroom.core.setting_checks import SettingUnavailable, check_setting
    from workroom.core.setting_rows import Store, rows_in

    given = [(row, getattr(args, row.name)) for row in rows_in(*Store) if getattr(args, row.name, None) is not None]
    settings = book.settings
    if not given:
        return settings, None
    checked: dict[str, object] = {}
    for row, value in given:
        why = here.why_not(row)
        if why is not None:
            raise SettingUnavailable("Setting not changed", f"--{row.flag}: {why}",
                                     "`workroom settings get` says which settings this computer can change.")
        checked[row.name] = check_setting(row.name, value, called=f"--{row.flag}")
    stored = {row.name: checked[row.name] for row, _ in given if row.store is not Store.SYSTEM}
    if stored:
        settings = await book.change_settings(stored)
    for row, _ in given:
        if row.store is Store.SYSTEM:
            try:
                here.write(row, checked[row.name] is True)
            except OSError as error:
                raise UserError("Setting not changed", f"--{row.flag}: {error}", "") from error
    return settings, set(checked)


def _setting_note(here: ThisComputer, row: SettingRow, value: object) -> str:
    """What to add to a row's value: why this computer cannot change it, what the system says, what empty means."""
    from workroom.core.setting_rows import Store

    why = here.why_not(row)
    if why is not None:
        return f"cannot be changed here: {why}"
    if row.store is Store.SYSTEM:
        return here.note(row)
    return f"empty: {row.empty}" if value == "" and row.empty else ""


def _print_settings(face: _Face, here: ThisComputer, settings: AppSettings, names: set[str] | None, *,
                    as_json: bool) -> None:
    """Every row (or the ones named), with its value, bounds, what it applies to and whether this computer can
    change it: a line each, or a JSON array (docs/cli.md)."""
    import json

    from workroom.core.setting_rows import Store, rows_in

    values = here.values(settings)
    rows = [row for row in rows_in(*Store) if names is None or row.name in names]
    notes = {row.name: _setting_note(here, row, values[row.name]) for row in rows}
    if as_json:
        face.out(json.dumps([{
            "name": row.name, "flag": f"--{row.flag}", "words": row.words, "kind": row.kind.value,
            "value": values[row.name], "default": row.default, "minimum": row.minimum, "maximum": row.maximum,
            "store": row.store.value, "applies_to": row.store.applies_to, "changeable": here.why_not(row) is None,
            "note": notes[row.name] or None} for row in rows]))
        return
    table = [(row.flag, row.value_words(values[row.name]), row.bounds_words(),
              row.store.applies_to + (f"; {notes[row.name]}" if notes[row.name] else "")) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for line in table:
        face.out("  ".join(cell.ljust(width) for cell, width in zip(line, [*widths, 0], strict=True)).rstrip())


async def _cmd_secret(args: argparse.Namespace, face: _Face) -> int:
    """Keep or forget a secret in the system keyring (asked for at the terminal, or read from stdin)."""
    import asyncio
    import os

    from workroom.core.errors import ExitCode
    from workroom.credentials import CredentialKey, CredentialStore

    if args.passphrase:
        path = os.path.expanduser(args.passphrase)
        key = CredentialKey.passphrase(path if os.path.isabs(path) else os.path.join(face.term.cwd, path))
    else:
        user, _, rest = args.password.rpartition("@")
        host, _, port = rest.partition(":")
        if not user or not host or not (port or "22").isdigit() or not 0 < int(port or 22) < 65536:
            face.err(f"workroom: --password takes USER@HOST[:PORT] with PORT 1-65535, got {args.password!r}")
            return ExitCode.USAGE
        try:
            key = CredentialKey.password(user, host, int(port or 22))
        except ValueError as error:
            face.err(f"workroom: --password: {error}")
            return ExitCode.USAGE
    store = face.engine.credentials if face.engine is not None else CredentialStore()
    if args.secret_command == "delete":
        await asyncio.to_thread(store.delete, key)
        face.out(f"forgot the {key.kind.value} for {key.subject}")
        return ExitCode.OK
    value = await face.term.ask(f"{key.kind.value.capitalize()} for {key.subject}: ", secret=True)
    if not value:
        face.err("workroom: nothing entered; nothing stored")
        return ExitCode.USAGE
    await asyncio.to_thread(store.set, key, value)
    face.out(f"stored the {key.kind.value} for {key.subject} in the system keyring ({store.backend_name()})")
    return ExitCode.OK


def _cmd_app(args: argparse.Namespace, face: _Face) -> int:
    """`workroom app status|quit`: answered by the app when it runs (it is the one that knows), else here."""
    import json
    import os

    from workroom.core.errors import ExitCode
    from workroom.paths import app_log_folder
    from workroom.platform.logs import LOG_FILE_NAME

    if args.app_command not in ("status", "quit"):
        face.err("workroom app: status or quit")
        return ExitCode.USAGE
    log_path = face.app.log_path if face.app is not None else app_log_folder() / LOG_FILE_NAME
    if args.app_command == "quit":
        if face.app is None:
            face.out("Workroom is not running.")
            return ExitCode.OK
        face.out("Workroom is quitting (every session closes first).")
        face.app.quit()
        return ExitCode.OK
    running = face.app is not None
    if getattr(args, "json", False):
        face.out(json.dumps({"running": running, "version": __version__ if running else None,
                             "pid": os.getpid() if running else None, "log": str(log_path) if log_path else None}))
    elif running:
        face.out(f"Workroom {__version__} is running (process {os.getpid()}); its log: {log_path}")
    else:
        face.out(f"Workroom is not running; its log: {log_path}")
    return ExitCode.OK if running else ExitCode.ERROR


ON_THE_LOOP = ("connect", "status", "keep", "let-sleep", "why", "exclusions", "settings", "secret")


def _dispatch(args: argparse.Namespace, face: _Face) -> int | Coroutine[Any, Any, int] | None:
    """The command's work: an exit code, or a coroutine that gives one (run on the loop). None: no command."""
    commands: dict[str, Callable[[argparse.Namespace, _Face], Any]] = {
        "hosts": _cmd_hosts, "app": _cmd_app, "connect": _cmd_connect, "status": _cmd_status, "keep": _cmd_keep,
        "let-sleep": _cmd_let_sleep, "why": _cmd_why, "exclusions": _cmd_exclusions, "settings": _cmd_settings,
        "secret": _cmd_secret}
    if args.command not in commands or (args.command == "secret" and not args.secret_command):
        return None
    result: int | Coroutine[Any, Any, int] = commands[args.command](args, face)
    return result


def _failed(error: BaseException, args: argparse.Namespace, face: _Face) -> int:
    """What a command that raised says, and its exit code."""
    from workroom.core.errors import ExitCode, UserError

    as_json = bool(getattr(args, "json", False))
    if isinstance(error, UserError):
        _err(error, face, as_json=as_json, name=getattr(args, "name", None))
        return int(error.exit_code)
    if isinstance(error, _Refused):
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

    While the app runs for this home, the command goes through it (`app_link`); `--help` is answered here.
    As the program, the cyclic garbage collector waits until start-up is over (it ran over the engine's
    import-time objects again and again: ~40 ms; `_collect_from_now`), and a command that used the engine ends
    the process without the interpreter's teardown (`_end_program`)."""
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

    gc.disable()
    code = _run(None)
    _collect_from_now()
    if "workroom.sessions.engine" in sys.modules:
        _end_program(code)
    return code


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # --version and --help end here, having imported nothing heavy
    face = _Face(_Here())
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


async def _guarded(work: Coroutine[Any, Any, int], args: argparse.Namespace, face: _Face) -> int:
    try:
        return await work
    except Exception as error:
        return _failed(error, args, face)


_APP_PARSER: list[tuple[argparse.ArgumentParser, _Says]] = []


def _app_parser() -> tuple[argparse.ArgumentParser, _Says]:
    """The app's parser, made once (building argparse's tree of commands took ~5 ms a command)."""
    if not _APP_PARSER:
        says = _Says()
        _APP_PARSER.append((build_parser(says), says))
    return _APP_PARSER[0]


async def serve(argv: list[str], term: Terminal, engine: Engine, app: AppSide | None = None) -> int:
    """Run one `workroom` command in the app, against its engine (its sessions stay as they are: connected,
    listened to by the window), saying everything on `term`: the words and JSON of the same command without the
    app. Never raises: a bug is logged and said in one line."""

    import argparse

    face = _Face(term, engine, app)
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
        return done.code if isinstance(done.code, int) else 2
    except Exception as error:
        return _failed_in_app(error, args, face, argv)
    finally:
        says.term = None
    if isinstance(work, int):
        return work
    try:
        return await _guarded(work, args, face)
    except Exception as error:
        return _failed_in_app(error, args, face, argv)


def _failed_in_app(error: Exception, args: argparse.Namespace, face: _Face, argv: list[str]) -> int:
    import logging

    try:
        return _failed(error, args, face)
    except Exception:
        logging.getLogger(__name__).exception("workroom %s failed in the app", " ".join(argv[:2]))
        face.err("workroom: the app could not run this command; its log says why.")
        return 1


if __name__ == "__main__":
    sys.exit(main())
