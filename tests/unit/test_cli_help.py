"""Every command's `--help` answers in words: `workroom hosts add --help` once ended in a traceback (argparse
on Python 3.11.7 calls `.strip()` on a help text, and the provider list's help is made only when printed)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest
from workroom import cli

pytestmark = pytest.mark.unit


def commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*prefix, name))


ALL = list(commands(cli.build_parser()))


@pytest.mark.parametrize("argv", ALL, ids=[" ".join(a) or "workroom" for a in ALL])
def test_every_help_answers(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.build_parser().parse_args([*argv, "--help"])
    assert ended.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: workroom"), out


def test_the_providers_are_listed_in_hosts_add_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["hosts", "add", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "ssh:" in out and "local:" in out, out
