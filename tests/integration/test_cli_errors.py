"""The `workroom` command says what is wrong with its input or its computer: no traceback, and an exit
code of its own for each kind (docs/cli.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from workroom.core.errors import ExitCode

pytestmark = pytest.mark.integration  # runs the real command in a child process


def workroom(tmp_path: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, WORKROOM_HOME=str(tmp_path / "home"), **env)
    return subprocess.run([sys.executable, "-m", "workroom.cli", *args], input=stdin, env=environ,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("target", ["u@h:abc", "u@h:0", "u@h:70000", "@h", "u@"])
def test_a_bad_password_target_is_a_usage_error(tmp_path: Path, target: str) -> None:
    r = workroom(tmp_path, "secret", "set", "--password", target, stdin="x\n")
    assert r.returncode == ExitCode.USAGE and "Traceback" not in r.stderr
    assert "USER@HOST[:PORT]" in r.stderr


def test_no_secure_keyring_has_its_own_exit_code(tmp_path: Path) -> None:
    """keyring's own `fail` backend: what a computer without a keyring service really gets."""
    r = workroom(tmp_path, "secret", "set", "--password", "u@h:22", stdin="x\n",
                 PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    assert r.returncode == ExitCode.NO_KEYRING == 8 and "No secure keyring" in r.stderr
    assert r.returncode != ExitCode.UNREACHABLE


def test_keep_on_a_host_that_never_sleeps_says_there_is_nothing_to_keep_awake(tmp_path: Path) -> None:
    """Keep awake only where it changes something: nothing is sent, and the words say why (not "restarted")."""
    assert workroom(tmp_path, "hosts", "add", "devbox", "--provider", "ssh", "--host", "127.0.0.1",
                    "--port", "9").returncode == 0
    r = workroom(tmp_path, "keep", "devbox")
    assert r.returncode == ExitCode.OK, r.stderr
    assert "never sleeps, so there is nothing to keep awake" in r.stdout and "restarted" not in r.stdout
    assert "nothing was sent" in r.stdout and "Traceback" not in r.stderr
