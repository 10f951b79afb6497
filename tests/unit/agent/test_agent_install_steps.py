"""The installer's other steps on the host, run in this process: the upload's check and rename
(wr_agent/install_place.py) and the wait for the agent (wr_agent/install_wait.py), its reading of the
agent's answers over an in-memory stream. Waiting on a real agent is held by
tests/integration/agent/test_agent_install_steps.py."""

import hashlib
import io
import json
import os
import time

import pytest
from wr_agent import install_place, install_wait

pytestmark = pytest.mark.unit
BUILD = "a" * 64


def test_an_upload_with_the_expected_hash_replaces_the_installed_bundle(tmp_path):
    staged, final = tmp_path / ".wr-agent.pyz.staged-1", tmp_path / "wr-agent.pyz"
    staged.write_bytes(b"new")
    final.write_bytes(b"old")
    assert install_place.place(str(staged), str(final), hashlib.sha256(b"new").hexdigest()) is None
    assert final.read_bytes() == b"new" and not staged.exists()


def test_a_damaged_upload_is_deleted_and_the_installed_bundle_kept(tmp_path, capsys):
    staged, final = tmp_path / ".wr-agent.pyz.staged-1", tmp_path / "wr-agent.pyz"
    staged.write_bytes(b"damaged")
    final.write_bytes(b"old")
    expected = hashlib.sha256(b"new").hexdigest()
    assert install_place.main([str(staged), str(final), expected]) == 1
    got = hashlib.sha256(b"damaged").hexdigest()
    assert capsys.readouterr().err == (
        f"sha256 mismatch: uploaded {got}, expected {expected}; the partial upload was deleted\n")
    assert final.read_bytes() == b"old" and not staged.exists()


class Stream:
    """The agent's side of one connection, in memory: what it says, and what it was sent."""

    def __init__(self, *lines):
        self.said = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        self.sent = b""

    def readline(self):
        return self.said.readline()

    def write(self, data):
        self.sent += data

    def flush(self):
        pass


HELLO = {"hello": "wr-agent", "protocol": 1, "build": BUILD}


def test_a_start_is_done_when_the_hello_names_the_build():
    assert install_wait.answers(Stream(HELLO), BUILD) == (True, f"agent still runs build {BUILD}")
    assert install_wait.answers(Stream(HELLO), "b" * 64) == (False, f"agent still runs build {BUILD}")


def test_a_restart_is_done_when_the_status_says_it_checks_again():
    event = {"event": "status", "status": {"stalled": True}}
    checking = Stream(HELLO, event, {"id": install_wait.WAIT_ID, "result": {"stalled": False}})
    assert install_wait.answers(checking, None) == (True, "still stalled")
    assert json.loads(checking.sent) == {"id": install_wait.WAIT_ID, "method": "status"}
    stalled = Stream(HELLO, {"id": install_wait.WAIT_ID, "result": {"stalled": True}})
    assert install_wait.answers(stalled, None) == (False, "still stalled")
    chatty = Stream(HELLO, *[event] * install_wait.SKIP_LINES)
    assert install_wait.answers(chatty, None) == (False, "no answer to status")


def test_no_agent_is_said_in_words_once_the_time_is_up(tmp_path):
    t0 = time.monotonic()
    why = install_wait.wait_for_agent(str(tmp_path / "agent.sock"), 0.3, BUILD)
    assert 0.3 <= time.monotonic() - t0 < 5
    assert why.startswith("the agent did not come up with the new build within 0 s (")
    assert os.strerror(2) in why  # the last try's own words: no such file
    assert install_wait.wait_for_agent(str(tmp_path / "agent.sock"), 0.1).startswith(
        "the agent did not come up checking within 0 s")
