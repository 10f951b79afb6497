"""Hostile numbers and files around a real agent: huge integers in the settings file, a request and a
hand-off state; a FIFO where a file belongs; temp files a failed save left behind. Each is reported like
any corrupt input, and the agent starts and answers."""

import json
import os
import time

import pytest
from agentrun import private_dir, start_agent

pytestmark = pytest.mark.integration

HUGE = "1" + "0" * 400


@pytest.fixture
def sock(tmp_path):
    return os.path.join(private_dir(tmp_path / "run"), "agent.sock")


def quick_agent(sock, *extra):
    return start_agent(sock, "--candidates", "user", "--no-heartbeat", "--tick-seconds", "0.2", *extra)


def test_a_huge_integer_in_the_settings_file_is_reported_not_fatal(sock):
    with open(sock + ".settings", "w") as f:
        f.write(json.dumps({"ceiling_seconds": int(HUGE), "prompt_timeout_seconds": 600, "ask_at_ceiling": False}))
    a = quick_agent(sock, "--awake-ceiling", "3600")
    try:
        st = a.status()
        assert "ceiling_seconds" in st["settings_error"] and st["ceiling_seconds"] == 3600
        assert len(st["settings_error"]) < 300
    finally:
        a.stop()


def test_a_huge_integer_in_a_settings_request_is_out_of_range(sock):
    a = quick_agent(sock)
    try:
        c = a.client()
        c.send_raw(b'{"id": 1, "method": "settings", "ceiling_seconds": %s, "prompt_timeout_seconds": 600,'
                   b' "ask_at_ceiling": false}\n' % HUGE.encode())
        reply = c.read()
        assert reply["error"]["code"] == "out_of_range", reply
        assert c.call("status")["result"]["ceiling_seconds"] == 4 * 3600  # nothing changed
        c.close()
    finally:
        a.stop()


@pytest.mark.parametrize("state", [
    {"ceiling": {"state": "below", "awake_start": int(HUGE)}, "classifier": {}},
    {"ceiling": [1], "classifier": "x"},
])
def test_a_bad_handoff_state_is_ignored_and_the_agent_runs(sock, state):
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    settings = {"ceiling_seconds": 3600, "prompt_timeout_seconds": 600, "ask_at_ceiling": False}
    # `written` is this boot's monotonic clock now, so the state is fresh and really gets restored.
    body = dict(state, settings=settings, boot_id=boot, written=time.monotonic(), classifier_busy=True,
                published_busy=True)
    with open(sock + ".state", "w") as f:
        f.write(json.dumps(body))
    a = quick_agent(sock)
    try:
        for _ in range(3):
            st = a.status()  # the status answers (a huge awake_start would overflow every tick)
            assert st["stalled"] is False
            time.sleep(0.3)
        assert not os.path.exists(sock + ".state")
    finally:
        a.stop()
