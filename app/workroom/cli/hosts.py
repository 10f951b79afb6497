"""`workroom hosts add|edit|list|remove|price`: the host list, changed in the app's engine when it runs (its window
shows the change at once) or in hosts.json (a locked read-modify-write). A refused value names the flag typed."""

from __future__ import annotations

from workroom.cli.face import Face, say_error, usage
from workroom.cli.parser import HOST_FLAGS
from workroom.cli.words import NAME_COLUMN, asleep_words, last_known_json

TYPE_CHECKING = False  # not `typing`'s: the command's start imports nothing it does not use (docs/cli.md)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Coroutine, Mapping
    from typing import Any

    from workroom.core.errors import UserError
    from workroom.core.hosts import Host, HostsFile
    from workroom.sessions.engine import Engine


def cmd_hosts(args: argparse.Namespace, face: Face) -> int | Coroutine[Any, Any, int]:
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


async def _remove_uninstalling(args: argparse.Namespace, face: Face) -> int:
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
                                "last_known": last_known_json(engine.last_known(name))}
                raise refusal
        try:
            report = await engine.remove_host(name, uninstall=True)
        except UserError as error:
            say_error(error, face, as_json=args.json, name=name)
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
        return session.connection.spec.may_be_asleep
    try:
        return await engine.provider_for(host).box_state(host) is BoxState.ASLEEP
    except Exception:  # a provider that should say and cannot: it may be asleep
        return host.traits.metering.sleeps


def _list_hosts(face: Face, hosts: HostsFile, *, as_json: bool) -> None:
    import json

    from workroom.core.text_width import pad

    if as_json:
        face.out(json.dumps([h.model_dump(mode="json") for h in hosts.hosts]))
        return
    for h in hosts.hosts:
        where = f"{h.user + '@' if h.user else ''}{h.address or ''}{':' + str(h.port) if h.port else ''}"
        face.out(f"{pad(h.name, NAME_COLUMN)} {h.provider:<16} {where}".rstrip())


def _identity(face: Face, given: str) -> str:
    """`--identity` as stored: a path from the home (`~/...`) kept so, any other made absolute from the folder the
    command was typed in; a file that is not there is refused now, not at the first connect."""
    import os

    from workroom.core.errors import UserError

    stored = given if given.startswith("~") else os.path.normpath(os.path.join(face.term.cwd, given))
    if not os.path.isfile(os.path.expanduser(stored)):
        raise _BadFlag(UserError("No such key file", f"--identity: {stored} is not a file.",
                                 "Give the path of the private key to log in with (ssh-keygen makes one)."))
    return stored


class _BadFlag(Exception):
    """A host flag refused: its UserError (exit 2)."""

    def __init__(self, error: UserError) -> None:
        super().__init__(error.message)
        self.error = error


def _flag_values(args: argparse.Namespace, face: Face, provider: str) -> dict[str, Any]:
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


def _host_from_flags(args: argparse.Namespace, face: Face) -> Host | int:
    from workroom.core.hosts import Host

    try:
        return Host(name=args.name, provider=args.provider, **_flag_values(args, face, args.provider))
    except _BadFlag as bad:
        return _refused_flag(face, bad.error)
    except ValueError as error:
        return _refused_host(face, error)


def _host_changes(args: argparse.Namespace, face: Face, host: Host) -> dict[str, Any] | int:
    try:
        changes = _flag_values(args, face, args.provider or host.provider)
    except _BadFlag as bad:
        return _refused_flag(face, bad.error)
    except ValueError as error:
        return _refused_host(face, error)
    if args.provider is not None:
        changes["provider"] = args.provider
    if not changes:
        return usage(face, f"hosts edit {args.name}: nothing to change (give the flags to change, as for "
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


def _refused_flag(face: Face, error: UserError) -> int:
    from workroom.core.errors import ExitCode

    say_error(error, face, as_json=False)
    return ExitCode.USAGE


def _refused_host(face: Face, error: ValueError) -> int:
    """A host value refused, naming the flag typed (never pydantic's own message)."""
    from pydantic import ValidationError

    from workroom.core.errors import ExitCode, UserError
    from workroom.core.refusals import refusal_words

    if isinstance(error, UserError):
        raise error
    words = refusal_words(error, HOST_FLAGS) if isinstance(error, ValidationError) else str(error)
    face.err(f"workroom: invalid host: {words}")
    return ExitCode.USAGE
