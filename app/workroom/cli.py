"""The `workroom` command line: the engine, headless.

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
    from collections.abc import AsyncIterator, Callable
    from contextlib import AbstractAsyncContextManager
    from typing import Any, NoReturn

    from workroom.core.app_settings import AppSettings
    from workroom.core.errors import BoxAsleep, UserError
    from workroom.core.questions import HostKeyQuestion
    from workroom.core.setting_rows import SettingRow
    from workroom.paths import AppPaths
    from workroom.sessions.engine import Engine
    from workroom.sessions.host_session import HostSession, HostSnapshot
    from workroom.this_computer import ThisComputer


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


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="workroom", description="Workroom companion, headless.")
    parser.add_argument("--version", action="version", version=f"workroom {__version__}")
    sub = parser.add_subparsers(dest="command")

    hosts = sub.add_parser("hosts", help="add, list and remove hosts").add_subparsers(dest="hosts_command")
    add = hosts.add_parser("add", help="add a host (its name is its workroom)")
    add.add_argument("name")
    add.add_argument("--provider", required=True, choices=_Providers(), metavar="PROVIDER",
                     help=_LaterText(_provider_help))  # type: ignore[arg-type]
    add.add_argument("--host", dest="address")
    add.add_argument("--port", type=int)
    add.add_argument("--user")
    add.add_argument("--identity", help="private key file")
    add.add_argument("--idle-window", type=float, help="seconds the provider lets the box idle")
    add.add_argument("--candidates", choices=["all", "user"], help="which processes count as work")
    add.add_argument("--ref", dest="reference", action="append", default=[], metavar="[FIELD=]VALUE",
                     help=_LaterText(_reference_help))  # type: ignore[arg-type]
    hosts.add_parser("list", help="list hosts").add_argument("--json", action="store_true")
    rm = hosts.add_parser("remove", help="remove a host")
    rm.add_argument("name")
    rm.add_argument("--uninstall", action="store_true",
                    help="first stop the agent on the host and remove it (wakes an asleep box: you asked)")

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

    _settings_parser(sub)

    secret = sub.add_parser("secret", help="SSH passphrases and passwords, kept only in the system keyring")
    secret_sub = secret.add_subparsers(dest="secret_command")
    for verb in ("set", "delete"):
        sp = secret_sub.add_parser(verb)
        which = sp.add_mutually_exclusive_group(required=True)
        which.add_argument("--passphrase", metavar="KEY_FILE", help="the passphrase of this private key file")
        which.add_argument("--password", metavar="USER@HOST:PORT", help="the SSH password of this login")

    keep = sub.add_parser("keep", help="answer a ceiling prompt: keep the box awake")
    keep.add_argument("name")
    _wake_flag(keep)
    let_sleep = sub.add_parser("let-sleep", help="answer a ceiling prompt: let the box sleep now")
    let_sleep.add_argument("name")

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
    return parser


def _settings_parser(sub: Any) -> None:
    """`workroom settings get|set`: one flag of `set` per row of core.setting_rows, made when `set` is parsed or
    its help printed (`workroom --help` imports no rows)."""
    import argparse

    class LaterFlags(argparse.ArgumentParser):
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
            return super().format_help()

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


def _asleep(engine: Engine, name: str, command: str) -> BoxAsleep:
    from workroom.core.errors import BoxAsleep

    return BoxAsleep("Asleep", asleep_words(engine, name),
                     f"`workroom {command} {name} --wake` to wake it and {WAKE_DOING[command]}.")


def _err(error: UserError) -> None:
    from workroom.core.errors import BoxAsleep, Face

    if isinstance(error, BoxAsleep):  # an answer, not an error: one line, as the example reads
        print(f"{error.message}; {error.hint}", flush=True)
        return
    print(f"workroom: {error.title}: {error.message}", file=sys.stderr)
    hint = error.advice(Face.CLI)
    if hint:
        print(f"  {hint}", file=sys.stderr)


def _engine(auto_reconnect: bool = False) -> Engine:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine

    paths = app_paths()
    engine = Engine(paths, load_agent_bundle(paths), auto_reconnect=auto_reconnect)
    for problem in engine.problems:
        _err(problem)
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


def _snapshot_line(snap: HostSnapshot) -> str:
    """One host: its badge, connection and what keeps it busy, in the words the app uses (core.busy_reasons)."""
    from workroom.core.badge import agent_clock
    from workroom.core.busy_reasons import reason_words
    from workroom.core.errors import Face

    now = time.monotonic()
    b = snap.badge(now, Face.CLI)
    status = snap.status
    words = reason_words(status, agent_now=agent_clock(status, snap.connection, now)) if status else []
    line = f"{snap.host.name:<20} {b.label:<28} {snap.connection.state.value:<12}"
    if words:
        line += " " + "; ".join(words[:3])
    if snap.connection.error is not None and b.spec.shows_error:
        line += f"  ({snap.connection.error.message})"
    return line


async def _cmd_connect(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from workroom.core.errors import ExitCode

    engine = _engine()
    session = engine.session(args.name)

    async def answer(_session: HostSession, question: HostKeyQuestion) -> bool:
        if args.trust_new_host_key:
            print(f"workroom: trusting new host key {question.fingerprint}", file=sys.stderr)
            return True
        return False

    session.host_key_answerer = answer
    from workroom.core.connection import ConnectionState

    try:
        snap = await session.connect(timeout=args.timeout, wake=args.wake)
        if snap.connection.state is ConnectionState.ASLEEP:
            raise _asleep(engine, args.name, "connect")
        print(json.dumps(_snapshot_json(snap)) if args.json else _snapshot_line(snap), flush=True)
        if args.watch:
            done = asyncio.get_running_loop().create_future()

            def show(s: HostSnapshot) -> None:
                print(json.dumps(_snapshot_json(s)) if args.json else _snapshot_line(s), flush=True)

            session.listeners.append(show)
            session.auto_reconnect = True
            await done
        return ExitCode.OK
    finally:
        await engine.close()


async def _cmd_status(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from workroom.core.errors import ExitCode, UserError

    engine = _engine(auto_reconnect=args.watch)
    code = ExitCode.OK
    try:
        async def one(name: str) -> HostSnapshot:
            session = engine.session(name)
            try:
                return await session.connect(timeout=30)  # never wakes an asleep box: its row says so
            except UserError:
                return session.snapshot()

        snaps = await asyncio.gather(*(one(n) for n in engine.hosts.names()))
        if args.json:
            print(json.dumps([_with_last_known(engine, s) for s in snaps]), flush=True)
        else:
            for s in snaps:
                print(_status_line(engine, s), flush=True)
        if args.watch:  # then one line per change: with --json, each a JSON object (the stream is JSON Lines)
            engine.listeners.append(lambda s: print(json.dumps(_with_last_known(engine, s)) if args.json
                                                    else _status_line(engine, s), flush=True))
            await asyncio.get_running_loop().create_future()
        return code
    finally:
        await engine.close()


class _NeverSleeps(Exception):
    """The command changes something only on a box that sleeps, and this host never does."""


def _status_line(engine: Engine, snap: HostSnapshot) -> str:
    from workroom.core.connection import ConnectionState

    line = _snapshot_line(snap)
    if snap.connection.state is ConnectionState.ASLEEP:
        line += f"  ({asleep_words(engine, snap.host.name)}; not woken)"
    return line


def _with_last_known(engine: Engine, snap: HostSnapshot) -> dict[str, Any]:
    known = engine.last_known(snap.host.name)
    return {**_snapshot_json(snap), "last_known": {
        "verdict": known.doing, "reported": known.reported, "since": known.since, "seen_at": known.seen_at,
        "asleep_since": known.asleep_since}}


async def _connected_session(name: str, command: str, wake: bool,
                             only_if_it_sleeps: bool) -> AsyncIterator[HostSession]:
    from workroom.core.connection import ConnectionState

    engine = _engine()
    try:
        session = engine.session(name)
        if only_if_it_sleeps and not session.traits.sleeps_when_idle:
            raise _NeverSleeps(name)
        snap = await session.connect(timeout=30, wake=wake)
        if snap.connection.state is ConnectionState.ASLEEP:
            raise _asleep(engine, name, command)
        yield session
    finally:
        await engine.close()


def _connected(name: str, command: str, wake: bool = False, *,
               only_if_it_sleeps: bool = False) -> AbstractAsyncContextManager[HostSession]:
    """A session to host `name`, connected, for one command; the engine closes when the command is done.

    A box its provider says is asleep is left asleep unless `wake`: then `BoxAsleep` (exit 9) answers from
    what the app last knew. Where the provider cannot tell, it connects. `only_if_it_sleeps`: raise
    `_NeverSleeps` before connecting to a host that never sleeps."""
    import contextlib  # here, not at the top: `workroom --version` imports nothing it does not use

    return contextlib.asynccontextmanager(_connected_session)(name, command, wake, only_if_it_sleeps)


async def _cmd_keep(args: argparse.Namespace) -> int:
    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    try:
        async with _connected(args.name, "keep", args.wake, only_if_it_sleeps=True) as session:
            status = await session.call(Method.KEEP)
            print(f"{args.name}: kept awake; ceiling restarted (awake {status.awake_seconds:.0f} s)")
            return ExitCode.OK
    except _NeverSleeps:  # Keep awake only where it changes something
        print(f"{args.name} never sleeps, so there is nothing to keep awake (its awake ceiling is only a note); "
              "nothing was sent to it.")
        return ExitCode.OK


async def _cmd_let_sleep(args: argparse.Namespace) -> int:
    """Never wakes: an asleep box is already what the user asked for."""
    from workroom.core.connection import ConnectionState
    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    engine = _engine()
    try:
        session = engine.session(args.name)
        if not session.traits.sleeps_when_idle:
            print(f"workroom: {args.name} never sleeps, so there is nothing to let sleep.", file=sys.stderr)
            return ExitCode.ERROR
        snap = await session.connect(timeout=30)
        if snap.connection.state is ConnectionState.ASLEEP:
            print(f"{asleep_words(engine, args.name)}: already what you asked for; nothing sent.")
            return ExitCode.OK
        status = await session.call(Method.LET_SLEEP)
        if status.suppressed:
            print(f"{args.name}: let sleep; its agent no longer keeps it awake, so it sleeps within its idle "
                  "window")
        else:
            print(f"{args.name}: idle already; nothing keeps it awake")
        return ExitCode.OK
    finally:
        await engine.close()


async def _cmd_why(args: argparse.Namespace) -> int:
    import json

    from workroom.core import timeline as tl
    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    try:
        window = tl.parse_since(args.since)
    except ValueError as error:
        print(f"workroom: --since: {error}", file=sys.stderr)
        return ExitCode.USAGE
    async with _connected(args.name, "why", args.wake) as session:
        # Asked from a little earlier than the window, in case the box's clock runs ahead of ours.
        reply = await session.call(Method.TIMELINE, since=time.time() - window - 3600)
        summary = tl.summarise(reply, window)
        period = tl.period_words(window)
        cost = tl.cost_words(summary, session.host.hourly_price)
        if args.json:
            print(json.dumps({
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
        print(f"{session.host.name}: {summary.headline(period)}")
        others = summary.other_lines()
        if others:
            print("  " + ", ".join(others))
        print(f"  [{tl.text_strip(summary)}]  ({tl.STRIP_LEGEND})")
        if cost:
            print(f"  cost {cost}")
        if summary.problem:
            print(f"  note: {summary.problem}")
        return ExitCode.OK


async def _cmd_exclusions(args: argparse.Namespace) -> int:
    import json

    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    async with _connected(args.name, "exclusions", args.wake) as session:
        current = await session.call(Method.EXCLUSIONS)
        if args.add or args.remove:
            names = [n for n in current.names if n not in set(args.remove)]
            names += [n for n in args.add if n not in names]
            current = await session.call(Method.EXCLUSIONS, names=names)
        if args.json:
            print(json.dumps({"name": session.host.name, "never_work": list(current.names),
                              "problem": current.problem}))
        else:
            listed = ", ".join(current.names) if current.names else "nothing"
            print(f"{session.host.name}: never work: {listed}")
            if current.problem:
                print(f"  note: {current.problem}")
        return ExitCode.OK


async def _remove_uninstalling(name: str) -> int:
    from workroom.core.errors import ExitCode, UserError

    engine = _engine()
    try:
        engine.hosts.require(name)
        try:
            report = await engine.remove_host(name, uninstall=True)
        except UserError as error:
            _err(error)
            print(f"workroom: {name} was not removed (its agent may still run there); "
                  f"`workroom hosts remove {name}` removes it anyway", file=sys.stderr)
            return int(error.exit_code)
        assert report is not None
        print(f"removed {name}; on the host: {report.words()}")
        for problem in report.problems:
            print(f"  note: {problem}")
        return ExitCode.OK
    finally:
        await engine.close()


def _cmd_hosts(args: argparse.Namespace) -> int:
    import json

    from workroom.core.errors import ExitCode
    from workroom.core.hosts import Host, IdentityRef
    from workroom.core.provider_specs import PROVIDER_SPECS
    from workroom.paths import app_paths
    from workroom.storage import load_hosts, save_hosts

    paths = app_paths().ensure()
    loaded = load_hosts(paths)
    if loaded.problem:
        _err(loaded.problem)
    hosts = loaded.value
    if args.hosts_command == "add":
        try:
            host = Host(
                name=args.name, provider=args.provider, address=args.address, port=args.port, user=args.user,
                identity=IdentityRef.file(args.identity) if args.identity else None,
                idle_window_seconds=args.idle_window, agent_candidates=args.candidates,
                reference=PROVIDER_SPECS[args.provider].reference_from_args(args.reference),
            )
        except ValueError as error:
            print(f"workroom: invalid host: {error}", file=sys.stderr)
            return ExitCode.USAGE
        save_hosts(paths, hosts.add(host))
        print(f"added {host.name} ({host.provider})")
    elif args.hosts_command == "remove":
        if args.uninstall:
            import asyncio

            return asyncio.run(_remove_uninstalling(args.name))
        save_hosts(paths, hosts.remove(args.name))
        print(f"removed {args.name}; its agent, if one runs there, keeps running "
              f"(`workroom hosts remove NAME --uninstall` stops and removes it)")
    elif args.hosts_command == "price":
        host = hosts.require(args.name)
        try:
            value = None if args.price.lower() in ("none", "off", "") else float(args.price)
            host = Host.model_validate({**host.model_dump(), "hourly_price": value})
        except ValueError:
            print(f"workroom: the hourly price must be a number from 0 to 100000, or none (got {args.price!r})",
                  file=sys.stderr)
            return ExitCode.USAGE
        save_hosts(paths, hosts.replace(host))
        print(f"{host.name}: hourly price {'not set' if value is None else f'{value:g}'}")
    elif args.hosts_command == "list":
        if args.json:
            print(json.dumps([h.model_dump(mode="json") for h in hosts.hosts]))
        else:
            for h in hosts.hosts:
                where = f"{h.user + '@' if h.user else ''}{h.address or ''}{':' + str(h.port) if h.port else ''}"
                print(f"{h.name:<20} {h.provider:<16} {where}")
    else:
        print("workroom hosts: add, list or remove", file=sys.stderr)
        return ExitCode.USAGE
    return ExitCode.OK


def _cmd_settings(args: argparse.Namespace) -> int:
    """`get` lists every row with its value and bounds; `set` changes only the rows whose flags were given
    (checked first, each refusal naming the flag), in settings.json or, for open at login, in the system."""
    from workroom.core.errors import ExitCode
    from workroom.paths import app_paths, profile_env
    from workroom.storage import load_settings
    from workroom.this_computer import ThisComputer

    if args.settings_command not in ("get", "set"):
        print("workroom settings: get or set", file=sys.stderr)
        return ExitCode.USAGE
    paths = app_paths().ensure()
    loaded = load_settings(paths)
    if loaded.problem:
        _err(loaded.problem)
    here = ThisComputer.here(profile_env())
    settings = loaded.value
    names = None
    if args.settings_command == "set":
        settings, names = _set_settings(args, here, settings, paths)
    _print_settings(here, settings, names, as_json=getattr(args, "json", False))
    return ExitCode.OK


def _set_settings(args: argparse.Namespace, here: ThisComputer, settings: AppSettings,
                  paths: AppPaths) -> tuple[AppSettings, set[str] | None]:
    """Check every flag given, then store them: the new settings, and the names changed (None: no flag)."""
    from workroom.core.errors import UserError
    from workroom.core.setting_checks import SettingUnavailable, check_setting
    from workroom.core.setting_rows import Store, rows_in
    from workroom.storage import save_settings

    given = [(row, getattr(args, row.name)) for row in rows_in(*Store) if getattr(args, row.name, None) is not None]
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
        settings = settings.with_changes(stored)
        save_settings(paths, settings)
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


def _print_settings(here: ThisComputer, settings: AppSettings, names: set[str] | None, *, as_json: bool) -> None:
    """Every row (or the ones named), with its value, bounds, what it applies to and whether this computer can
    change it: a line each, or a JSON array (docs/cli.md)."""
    import json

    from workroom.core.setting_rows import Store, rows_in

    values = here.values(settings)
    rows = [row for row in rows_in(*Store) if names is None or row.name in names]
    notes = {row.name: _setting_note(here, row, values[row.name]) for row in rows}
    if as_json:
        print(json.dumps([{
            "name": row.name, "flag": f"--{row.flag}", "words": row.words, "kind": row.kind.value,
            "value": values[row.name], "default": row.default, "minimum": row.minimum, "maximum": row.maximum,
            "store": row.store.value, "applies_to": row.store.applies_to, "changeable": here.why_not(row) is None,
            "note": notes[row.name] or None} for row in rows]))
        return
    table = [(row.flag, row.value_words(values[row.name]), row.bounds_words(),
              row.store.applies_to + (f"; {notes[row.name]}" if notes[row.name] else "")) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, [*widths, 0], strict=True)).rstrip())


def _cmd_secret(args: argparse.Namespace) -> int:
    import getpass
    from pathlib import Path

    from workroom.core.errors import ExitCode
    from workroom.credentials import CredentialKey, CredentialStore

    if args.passphrase:
        key = CredentialKey.passphrase(str(Path(args.passphrase).expanduser().absolute()))
    else:
        user, _, rest = args.password.rpartition("@")
        host, _, port = rest.partition(":")
        if not user or not host or not (port or "22").isdigit() or not 0 < int(port or 22) < 65536:
            print(f"workroom: --password takes USER@HOST[:PORT] with PORT 1-65535, got {args.password!r}",
                  file=sys.stderr)
            return ExitCode.USAGE
        try:
            key = CredentialKey.password(user, host, int(port or 22))
        except ValueError as error:
            print(f"workroom: --password: {error}", file=sys.stderr)
            return ExitCode.USAGE
    store = CredentialStore()
    if args.secret_command == "delete":
        store.delete(key)
        print(f"forgot the {key.kind.value} for {key.subject}")
        return ExitCode.OK
    prompt = f"{key.kind.value.capitalize()} for {key.subject}: "
    value = getpass.getpass(prompt) if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    if not value:
        print("workroom: nothing entered; nothing stored", file=sys.stderr)
        return ExitCode.USAGE
    store.set(key, value)
    print(f"stored the {key.kind.value} for {key.subject} in the system keyring ({store.backend_name()})")
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    """The `workroom` command (`argv` None: this process is the program; a list: called in-process, as tests do).

    As the program, the cyclic garbage collector waits until start-up is over (it ran over the engine's
    import-time objects again and again: ~40 ms; `_collect_from_now`), and a command that used the engine ends
    the process without the interpreter's teardown (`_end_program`)."""
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:  # the commonest probe of a CLI: no parser
        print(f"workroom {__version__}")
        return 0
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
    from workroom.core.errors import ExitCode, UserError

    on_the_loop = {"connect": _cmd_connect, "status": _cmd_status, "keep": _cmd_keep,
                   "let-sleep": _cmd_let_sleep, "why": _cmd_why, "exclusions": _cmd_exclusions}
    try:
        if args.command == "hosts":
            return _cmd_hosts(args)
        if args.command == "settings":
            return _cmd_settings(args)
        if args.command in on_the_loop:
            import asyncio

            return asyncio.run(on_the_loop[args.command](args))
        if args.command == "secret" and args.secret_command:
            return _cmd_secret(args)
    except UserError as error:
        _err(error)
        return int(error.exit_code)
    except KeyboardInterrupt:
        return ExitCode.OK
    parser.print_help()
    return ExitCode.USAGE


if __name__ == "__main__":
    sys.exit(main())
