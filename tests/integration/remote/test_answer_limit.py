"""A host that answers a command with an endless stream costs a bounded amount of memory and a sentence,
not the app: the real sshd (and this computer's shell) running commands that never stop printing."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest
from integration.remote.test_ssh_connection import connect, trusted_known_hosts
from workroom.agent_bundle import locate_agent_bundle
from workroom.providers.ssh_shell import SshShell
from workroom.remote.agent_install import AgentInstaller, AgentLayout, ServeOptions
from workroom.remote.answer_limit import COMMAND_ANSWER, PROBE_ANSWER, AnswerTooLarge
from workroom.remote.host_shell import LocalShell

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_an_endless_answer_over_ssh_stops_at_the_cap_in_words(sshd, tmp_path: Path, stream: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """The sentence names "a command the app ran" (its text is the app's machinery); the log names the command."""
    caplog.set_level("INFO", logger="workroom")
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        tracemalloc.start()
        started = time.monotonic()
        try:
            with pytest.raises(AnswerTooLarge) as info:
                conn.exec("cat /dev/zero" + (" >&2" if stream == "stderr" else ""), timeout=20)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.monotonic() - started < 10  # not the whole 20 s time limit
        assert peak < 8 * COMMAND_ANSWER.max_bytes
        assert f"more than {COMMAND_ANSWER.max_bytes // 1024} KiB in answer to a command the app ran" in \
            info.value.message
        assert "cat /dev/zero" not in info.value.message
        assert "the command was: cat /dev/zero" in caplog.text
        assert conn.exec("echo still here").stdout == b"still here\n"  # the connection is fine


def test_a_probe_answered_with_an_endless_stream_fails_naming_the_probe(sshd, tmp_path: Path) -> None:
    """The host's "python3" prints for ever (what a compromised host did to grow the CLI to 2 GB)."""
    bundle = locate_agent_bundle(tmp_path / "cache")
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        installer = AgentInstaller(SshShell(conn), bundle, AgentLayout(), ServeOptions(workroom="w"),
                                   python=("/usr/bin/yes",))
        started = time.monotonic()
        with pytest.raises(AnswerTooLarge) as info:
            installer.probe()
        assert time.monotonic() - started < 10
        assert info.value.message.startswith(
            f"The host sent more than {PROBE_ANSWER.max_bytes // 1024} KiB in answer to the agent probe")
        assert info.value.retryable is False


def test_this_computers_shell_is_capped_the_same_way() -> None:
    started = time.monotonic()
    with pytest.raises(AnswerTooLarge):
        LocalShell().run("cat /dev/zero", timeout=20)
    assert time.monotonic() - started < 10
    done = LocalShell().run("cat", input=b"x" * 300_000, timeout=20, limit=PROBE_ANSWER.__class__(400_000))
    assert done.ok and done.stdout == b"x" * 300_000
