"""The `workroom` command's arguments (argparse), made light: provider and setting rows are read only when a
command's flags need them, so `workroom --help` imports no rows (docs/cli.md, start-up)."""

from __future__ import annotations

import sys

from workroom import __version__

TYPE_CHECKING = False  # not `typing`'s: the command's start imports nothing it does not use (docs/cli.md)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any, NoReturn

    from workroom.cli.face import Terminal
    from workroom.core.setting_rows import SettingRow


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


TOUCH = ("This command reaches the box (a touch, not a look): on a network-metered box it moves its idle clock "
         "once, and on Coder or Codespaces it is a session. An asleep box is woken only with --wake.")
"""What the help of every command that reaches a box says (`workroom.cli.TOUCHES`; docs/cli.md)."""


class Says:
    """Where the app's parser says what it says: the terminal of the command being parsed (the app parses one
    command at a time, on its loop's thread)."""

    term: Terminal | None = None


def _parser_class(says: Says | None) -> type[argparse.ArgumentParser]:
    """argparse's parser, saying what it says (usage, help, a refused argument) on the terminal of the command
    the app is parsing, and ending the parse with SystemExit as argparse does."""
    import argparse

    if says is None:
        return argparse.ArgumentParser
    where: Says = says

    class Parser(argparse.ArgumentParser):
        def _print_message(self, message: str, file: Any = None) -> None:
            if message and where.term is not None:
                (where.term.err if file is sys.stderr else where.term.out)(message.rstrip("\n"))

        def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
            if message and where.term is not None:
                where.term.err(message.rstrip("\n"))
            raise SystemExit(status)

    return Parser


def build_parser(says: Says | None = None) -> argparse.ArgumentParser:
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

    connect = sub.add_parser("connect", help="connect to a host: push the agent if needed, subscribe, print status",
                             description=TOUCH)
    connect.add_argument("name")
    connect.add_argument("--trust-new-host-key", action="store_true",
                         help="trust a host key seen for the first time (a changed key is always refused)")
    connect.add_argument("--watch", action="store_true", help="keep printing status changes until interrupted")
    connect.add_argument("--json", action="store_true")
    connect.add_argument("--timeout", type=float, default=60.0)
    _wake_flag(connect)

    status = sub.add_parser("status", help="every host: what is known of it and its provider's own clock (a look: "
                                           "no box is reached; through the app, the app's live view)")
    status.add_argument("--json", action="store_true")
    status.add_argument("--live", action="store_true",
                        help="connect to each host and read it now (an asleep box is not woken); on a network-metered "
                             "box this moves its idle clock once, and on Coder or Codespaces it is a session")
    status.add_argument("--watch", action="store_true",
                        help="live view, connected as the app is (quiet while a box is idle), printing each change "
                             "until interrupted")

    _settings_parser(sub, type(parser))

    secret = sub.add_parser("secret", help="SSH passphrases and passwords, kept only in the system keyring")
    secret_sub = secret.add_subparsers(dest="secret_command")
    for verb in ("set", "delete"):
        sp = secret_sub.add_parser(verb)
        which = sp.add_mutually_exclusive_group(required=True)
        which.add_argument("--passphrase", metavar="KEY_FILE", help="the passphrase of this private key file")
        which.add_argument("--password", metavar="USER@HOST:PORT", help="the SSH password of this login")

    keep = sub.add_parser("keep", help="answer a ceiling prompt: keep the box awake", description=TOUCH)
    keep.add_argument("name")
    keep.add_argument("--json", action="store_true")
    _wake_flag(keep)
    let_sleep = sub.add_parser("let-sleep", help="answer a ceiling prompt: let the box sleep now",
                               description=TOUCH.replace(" An asleep box is woken only with --wake.",
                                                         " An asleep box is never woken: it is what was asked."))
    let_sleep.add_argument("name")
    let_sleep.add_argument("--json", action="store_true")

    why = sub.add_parser("why", help="what kept a host awake: its agent's record, in words", description=TOUCH)
    why.add_argument("name")
    why.add_argument("--since", default="24h", help="how far back: 24h (default), 90m, 2d ... (at most 7d)")
    why.add_argument("--json", action="store_true")
    _wake_flag(why)
    never = sub.add_parser("exclusions", help="process names that never count as work on a host",
                           description=TOUCH)
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
