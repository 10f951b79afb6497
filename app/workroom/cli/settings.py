"""`workroom settings`, `secret` and `app`: every setting row (core.setting_rows), the keyring, and the desktop app
itself."""

from __future__ import annotations

from workroom import __version__
from workroom.cli.face import Book, Face

TYPE_CHECKING = False  # not `typing`'s: the command's start imports nothing it does not use (docs/cli.md)

if TYPE_CHECKING:
    import argparse

    from workroom.core.app_settings import AppSettings
    from workroom.core.setting_rows import SettingRow
    from workroom.this_computer import ThisComputer


async def cmd_settings(args: argparse.Namespace, face: Face) -> int:
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
                        book: Book) -> tuple[AppSettings, set[str] | None]:
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


def _print_settings(face: Face, here: ThisComputer, settings: AppSettings, names: set[str] | None, *,
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


async def cmd_secret(args: argparse.Namespace, face: Face) -> int:
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


def cmd_app(args: argparse.Namespace, face: Face) -> int:
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
            face.out("Workroom is not running." + _what_stays(face, _agent_pid()))
            return ExitCode.OK
        face.out("Workroom is quitting (every session closes first)." + _what_stays(face, _agent_pid()))
        face.app.quit()
        return ExitCode.OK
    running = face.app is not None
    agent = None if running else _agent_pid()
    if getattr(args, "json", False):
        face.out(json.dumps({"running": running, "version": __version__ if running else None,
                             "pid": os.getpid() if running else None, "log": str(log_path) if log_path else None,
                             "this_computer_agent": agent}))
    elif running:
        face.out(f"Workroom {__version__} is running (process {os.getpid()}); its log: {log_path}")
    else:
        face.out(f"Workroom is not running; its log: {log_path}" + _what_stays(face, agent))
    return ExitCode.OK if running else ExitCode.ERROR


def _what_stays(face: Face, pid: int | None) -> str:
    """What keeps running after the app (or with no app), and how to stop it: this computer's agent (process
    `pid`), as the window's Quit says (ui/about_dialog.py)."""
    from workroom.cli.words import agent_stays
    from workroom.core.provider_specs import spec_for

    if pid is None:
        return ""
    name = next((h.name for h in face.book().hosts.hosts if spec_for(h.provider).is_this_computer), "NAME")
    words = agent_stays(pid, name)
    return f" {words[0].upper()}{words[1:]}."


def _agent_pid() -> int | None:
    from workroom.paths import app_paths
    from workroom.providers.local import running_agent_pid

    return running_agent_pid(app_paths().state_dir)
