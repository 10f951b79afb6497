"""The `workroom` command's exit code is decided by the error's type (`UserError.exit_code`), never by its
title's words. Runs `cli.main` in-process against a throwaway WORKROOM_HOME; no host is contacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from workroom import cli
from workroom.cli import hosts as cli_hosts
from workroom.core.ceiling import SettingsError
from workroom.core.errors import ExitCode, UserError
from workroom.core.hosts import DuplicateHostError, HostNotFoundError
from workroom.credentials import CredentialError, KeyringUnavailableError
from workroom.remote.host_keys import HostKeyChanged, HostKeyUnknown

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.mark.parametrize(("kind", "code"), [
    (UserError, ExitCode.UNREACHABLE),
    (HostNotFoundError, ExitCode.NO_HOST),
    (DuplicateHostError, ExitCode.ERROR),
    (SettingsError, ExitCode.OUT_OF_RANGE),
    (HostKeyUnknown, ExitCode.HOST_KEY_UNKNOWN),
    (HostKeyChanged, ExitCode.HOST_KEY_CHANGED),
    (KeyringUnavailableError, ExitCode.NO_KEYRING),
    (CredentialError, ExitCode.NO_KEYRING),  # a locked or failing keyring: nothing stored, host not at fault
])
def test_each_kind_of_error_carries_its_code(kind: type[UserError], code: ExitCode) -> None:
    assert kind.exit_code is code


def test_no_such_host_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hosts", "remove", "nowhere"]) == 3
    assert "No such host" in capsys.readouterr().err


def test_a_duplicate_host_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hosts", "add", "box", "--provider", "ssh", "--host", "box.example"]) == 0
    assert cli.main(["hosts", "add", "box", "--provider", "ssh", "--host", "box.example"]) == 1
    assert "already" in capsys.readouterr().err


def test_a_setting_out_of_range_exits_7(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["settings", "set", "--ceiling", "5"]) == 7
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ceiling" in err.lower()
    assert "got 5." in err and "5.0" not in err  # as typed
    assert cli.main(["settings", "set", "--ceiling", "2.5"]) == 7
    assert "got 2.5." in capsys.readouterr().err


def test_the_title_does_not_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error titled like a host-key refusal is still only what its type says."""

    def refuse(*_args: object) -> int:
        raise UserError("Host key changed", "A title that once decided the code.")

    monkeypatch.setattr(cli_hosts, "cmd_hosts", refuse)
    assert cli.main(["hosts", "list"]) == ExitCode.UNREACHABLE
