"""Every `workroom` command, without a wake, against an asleep box: what each no-wake test runs (a simulated box
in test_no_wake_simbox.py, stopped platform boxes in test_no_wake_platforms.py), and the exit codes each may end
with. `recipes` holds one per leaf command of the real parser: a command added without one fails those tests."""

from __future__ import annotations

import argparse
import subprocess
import sys

from workroom import cli
from workroom.core.errors import ExitCode

WORKROOM = [sys.executable, "-m", "workroom.cli"]
ANSWERS = {ExitCode.ASLEEP}
"""What a command that would reach the asleep box ends with: the asleep answer, nothing woken."""

Recipes = dict[tuple[str, ...], tuple[list[str], set[int]]]


def workroom(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WORKROOM, *argv], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def cli_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every leaf command of the parser: ("status",), ("hosts", "add"), ..."""
    found: set[tuple[str, ...]] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= cli_commands(sub, (*prefix, name)) or {(*prefix, name)}
    return found


def recipes(name: str, add_args: list[str], window: float) -> Recipes:
    """Each command naming the asleep host `name` (added with `add_args`; "spare" is a second host to remove)."""
    made: Recipes = {
        ("hosts", "add"): (["hosts", "add", name, *add_args], {ExitCode.OK}),
        ("hosts", "edit"): (["hosts", "edit", name, "--idle-window", str(window)], {ExitCode.OK}),
        ("hosts", "list"): (["hosts", "list"], {ExitCode.OK}),
        ("hosts", "price"): (["hosts", "price", name, "0.5"], {ExitCode.OK}),
        ("hosts", "remove"): (["hosts", "remove", "spare"], {ExitCode.OK}),
        ("app", "status"): (["app", "status"], {ExitCode.ERROR}),  # not running
        ("app", "quit"): (["app", "quit"], {ExitCode.OK}),
        ("connect",): (["connect", name], ANSWERS),
        ("status",): (["status"], {ExitCode.OK}),
        ("settings", "get"): (["settings", "get"], {ExitCode.OK}),
        ("settings", "set"): (["settings", "set", "--ceiling", "3600"], {ExitCode.OK}),
        ("secret", "set"): (["secret", "set", "--password", "u@127.0.0.1:22"], set(ExitCode)),
        ("secret", "delete"): (["secret", "delete", "--password", "u@127.0.0.1:22"], set(ExitCode)),
        ("keep",): (["keep", name], ANSWERS),
        ("let-sleep",): (["let-sleep", name], {ExitCode.OK}),
        ("why",): (["why", name], ANSWERS),
        ("exclusions",): (["exclusions", name, "--add", "watch"], ANSWERS),
    }
    assert set(made) == cli_commands(cli.build_parser()), "a command without a no-wake recipe here"
    return made
