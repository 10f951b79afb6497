"""The rule behind "the next start says if the box was suspended while busy" (pure; the agent's `last_gap`
field is produced by the real agent in tests/unit/agent)."""

from __future__ import annotations

import pytest
from unit.core.status_factory import make_status
from workroom.core.protocol import GapInfo
from workroom.sessions.reconnect_rules import slept_while_busy

pytestmark = pytest.mark.unit


def status(monotonic: float, gap: GapInfo | None):  # type: ignore[no-untyped-def]
    return make_status(monotonic=monotonic).model_copy(update={"last_gap": gap})


@pytest.mark.parametrize(("previous", "now", "gap", "sleeps", "expected"), [
    ({"verdict": "BUSY", "agent_monotonic": 100.0}, 500.0, GapInfo(at=400, seconds=200, busy_before=True), True, True),
    ({"verdict": "BUSY", "agent_monotonic": 100.0}, 500.0, GapInfo(at=50, seconds=200, busy_before=True), True, False),
    ({"verdict": "BUSY", "agent_monotonic": 100.0}, 500.0, GapInfo(at=400, seconds=200, busy_before=False), True,
     False),
    ({"verdict": "IDLE", "agent_monotonic": 100.0}, 500.0, GapInfo(at=400, seconds=200, busy_before=True), True,
     False),
    ({"verdict": "BUSY", "agent_monotonic": 100.0}, 500.0, None, True, False),
    ({"verdict": "BUSY", "agent_monotonic": 900.0}, 50.0, None, True, True),  # the box restarted since
    ({"verdict": "BUSY", "agent_monotonic": 100.0}, 500.0, GapInfo(at=400, seconds=200, busy_before=True), False,
     False),  # a host that never sleeps
    (None, 500.0, GapInfo(at=400, seconds=200, busy_before=True), True, False),
])
def test_rule(previous, now, gap, sleeps, expected) -> None:  # type: ignore[no-untyped-def]
    assert slept_while_busy(previous, status(now, gap), sleeps=sleeps) is expected
