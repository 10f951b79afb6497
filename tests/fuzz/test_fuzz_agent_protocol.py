"""Hostile protocol lines to a real agent: random bytes, JSON of any shape, settings numbers at the float
limits. Each line gets a reply with a documented error code (or a result); the agent still answers a
second client; the settings file changes only with a settings request that succeeded."""

from __future__ import annotations

import json
import math
import socket
from typing import Any

import pytest
from agentrun import send_and_read_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.integration

DOCUMENTED = {"invalid", "unsupported", "out_of_range", "too_large"}  # plus `failed` for a hand-off
METHODS = ["status", "settings", "ping", "subscribe", "handoff", "keep", "bogus", "", "STATUS"]
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
limits = st.sampled_from([0.0, -0.0, 5e-324, 1.0, 29.999999999, 30.0, 2592000.0, 2592000.0000001, 1e308,
                          1.7976931348623157e308, math.inf, -math.inf, math.nan, 10**400, -(10**400), 2**63])
durations = limits | st.floats() | st.integers() | st.text(max_size=5) | st.none() | st.booleans()
settings_requests = st.fixed_dictionaries(
    {"method": st.just("settings"), "ceiling_seconds": durations, "prompt_timeout_seconds": durations,
     "ask_at_ceiling": st.booleans() | json_values},
    optional={"id": st.integers() | st.text(max_size=10) | json_values},
)
requests = st.dictionaries(
    st.sampled_from(["id", "method", "ceiling_seconds", "prompt_timeout_seconds", "ask_at_ceiling", "x"]),
    json_values, max_size=6,
) | settings_requests | st.builds(
    lambda m, rid: {"id": rid, "method": m}, st.sampled_from(METHODS), st.integers() | st.text(max_size=10))


def encode(req: Any) -> bytes:
    return json.dumps(req, allow_nan=True).encode() + b"\n"  # NaN/Infinity tokens on purpose


lines = requests.map(encode) | st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ") + b"\n")


def exchange(path: str, data: bytes) -> list[dict[str, Any]]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    try:
        out = send_and_read_all(s, data)
    finally:
        s.close()
    return [json.loads(x) for x in out.split(b"\n") if x]


def settings_on_disk(sock: str) -> bytes | None:
    try:
        with open(sock + ".settings", "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


@FUZZ
@given(batch=st.lists(lines, min_size=1, max_size=3))
def test_hostile_lines_get_documented_replies_and_hurt_nothing(fuzz_agent: Any, batch: list[bytes]) -> None:
    before = settings_on_disk(fuzz_agent.sock)
    received = exchange(fuzz_agent.sock, b"".join(batch))
    assert received[0]["hello"] == "wr-agent"
    replies = [r for r in received[1:] if "event" not in r]
    assert len(replies) == sum(1 for line in batch if line.strip())
    applied = False
    for reply, line in zip(replies, [x for x in batch if x.strip()]):
        assert ("result" in reply) != ("error" in reply), reply
        if "error" in reply:
            code, message = reply["error"]["code"], reply["error"]["message"]
            assert code in DOCUMENTED or (code == "failed" and b"handoff" in line), reply
            assert "internal error" not in message and len(message) < 1000
        elif isinstance(reply["result"], dict) and "ceiling_seconds" in reply["result"] and b"settings" in line:
            applied = True
    after = settings_on_disk(fuzz_agent.sock)
    if not applied:
        assert after == before  # nothing written (or lost) by a refused request
    elif after is not None:
        saved = json.loads(after)
        assert math.isfinite(saved["ceiling_seconds"]) and 1 <= saved["ceiling_seconds"] <= 2592000
    status = fuzz_agent.status()  # a second client is still served
    assert status["verdict"] in ("BUSY", "IDLE")
    if after is not None:
        saved = json.loads(after)
        assert status["ceiling_seconds"] == saved["ceiling_seconds"]
