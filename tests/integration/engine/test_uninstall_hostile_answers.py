"""`workroom hosts remove NAME --uninstall` against a host playing compromised: the real CLI, a real sshd, and on
the host a `python3` first on the login user's PATH (sshd's PermitUserEnvironment and ~/.ssh/environment) that
answers the uninstall's command with what the test says and runs every other command with the real Python.
An answer of the wrong shape is refused in words, with no traceback, and the host is kept; an answer of the
right shape whose words carry terminal escapes is printed plain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_helpers import ssh_host
from fixtures import sshd as sshd_mod
from workroom.paths import AppPaths
from workroom.storage import load_hosts, save_hosts

pytestmark = [pytest.mark.integration, pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the test user")]
WORKROOM = [sys.executable, "-m", "workroom.cli"]
ESCAPES = ("\x1b", "\x07", "\x9b")

WRAPPER = """#!/bin/sh
# The host's python3, compromised: the uninstall's command gets the answer the test wrote; anything else runs.
script=$(cat)
case "$script" in
  *wr_agent.uninstall*) cat "$HOME/answer.txt"; exit 0 ;;
  *) printf '%s\\n' "$script" | exec /usr/bin/python3 "$@" ;;
esac
"""


@pytest.fixture
def compromised(sshd, tmp_path: Path) -> Iterator[sshd_mod.SshdServer]:  # type: ignore[no-untyped-def]
    """A second sshd for the test user that reads ~/.ssh/environment, where PATH starts with ~/bin."""
    variant = sshd_mod.launch_variant(sshd, tmp_path / "variant", extra=["PermitUserEnvironment yes"])
    home = sshd.home
    (home / "bin").mkdir(exist_ok=True)
    (home / "bin" / "python3").write_text(WRAPPER)
    (home / "bin" / "python3").chmod(0o755)
    (home / ".ssh" / "environment").write_text(f"PATH={home}/bin:/usr/bin:/bin\n")
    for path in (home / "bin", home / "bin" / "python3", home / ".ssh" / "environment"):
        os.chown(path, sshd.uid, sshd.uid)
    try:
        yield variant
    finally:
        sshd_mod.stop_variant(variant)
        (home / ".ssh" / "environment").unlink()


def remove_uninstalling(app_home: AppPaths, server, answer: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    (server.home / "answer.txt").write_text(answer + "\n")
    save_hosts(app_home, load_hosts(app_home).value.add(ssh_host(server)))
    with app_home.known_hosts_file.open("a") as handle:
        handle.write(server.host_key_line + "\n")
    return subprocess.run([*WORKROOM, "hosts", "remove", "box1", "--uninstall"], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("answer", [
    "[1,2,3]", '{"stopped":5}', '{"problems":[1,2],"still_running":true}', '{"stopped":[1,null]}', "Infinity", "0",
])
def test_an_answer_of_the_wrong_shape_is_refused_in_words_and_the_host_kept(
        app_home: AppPaths, compromised, answer: str) -> None:  # type: ignore[no-untyped-def]
    result = remove_uninstalling(app_home, compromised, answer)
    said = result.stdout + result.stderr
    assert result.returncode not in (0, 1), said  # a UserError's own code, not a crash's
    assert "Traceback" not in said and "Error:" not in said, said
    assert "Could not uninstall the agent" in result.stderr and "box1 was not removed" in result.stderr, said
    assert "box1" in load_hosts(app_home).value.names()


def test_an_answer_with_terminal_escapes_is_printed_plain(app_home: AppPaths, compromised) -> None:  # type: ignore[no-untyped-def]
    answer = json.dumps({"stopped": ["\x1b]0;PWNED\x07the agent (pid 7)"],
                         "removed": ["/x\x1b[2J", "/y"],
                         "problems": ["\x1b]52;c;ZXZpbA==\x07copied", "\x1b[8mhidden\x1b[0m", "\u009b2J"],
                         "still_running": False}, ensure_ascii=False)
    result = remove_uninstalling(app_home, compromised, answer)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any(e in result.stdout + result.stderr for e in ESCAPES), repr(result.stdout + result.stderr)
    assert "removed box1; on the host: stopped ?]0;PWNED?the agent (pid 7); removed 2 file(s)" in result.stdout
    assert "note: ?]52;c;ZXZpbA==?copied" in result.stdout and "note: ?[8mhidden?[0m" in result.stdout
    assert "box1" not in load_hosts(app_home).value.names()
