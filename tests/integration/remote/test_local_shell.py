"""This computer as a host (`LocalShell`): a command past its time limit fails as the SSH shell's does, with
`CommandTimedOut` in plain words, and leaves nothing of itself running. Real /bin/sh, real processes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from workroom.core.exception_names import shows_exception_name
from workroom.remote.host_shell import LocalShell
from workroom.remote.ssh_errors import CommandTimedOut

pytestmark = [pytest.mark.integration, pytest.mark.linux(reason="reads process states in /proc")]


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_command_past_its_time_is_command_timed_out_and_leaves_nothing_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # The shell starts a child of its own (as the installer's scripts do) and waits for it.
    cmd = f"sleep 60 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    with pytest.raises(CommandTimedOut) as timed_out:
        LocalShell().run(cmd, timeout=0.5)
    took = time.monotonic() - started
    error = timed_out.value
    assert error.title == "Command timed out"
    assert "did not finish within 0.5 s" in error.message and "sleep" not in error.message  # the command: in the log
    assert "this computer" in error.message
    assert not shows_exception_name(str(error)), str(error)
    assert took < 5, "the shell must not wait for the stopped command's children"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child), "the command's child is still running"


def test_a_command_in_time_still_returns_its_output() -> None:
    result = LocalShell().run("cat; echo err >&2; exit 3", input=b"in\n", timeout=10)
    assert (result.exit_status, result.stdout, result.stderr) == (3, b"in\n", b"err\n")
    assert LocalShell().run("cat", timeout=10).stdout == b"", "no input: the command reads an empty stdin"


def test_the_pid_file_helper_sees_this_process() -> None:
    assert _running(os.getpid())
