"""The rule behind "the next start says if the box was suspended while busy" (pure; the agent's `last_gap`
field is produced by the real agent in tests/unit/agent)."""

from __future__ import annotations

import pytest
from unit.core.status_factory import make_status
from workroom.core.protocol import GapInfo
from workroom.sessions.reconnect_rules import slept_while_busy, under_running_job

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


@pytest.mark.parametrize(("fields", "sleeps", "expected"), [
    ({"verdict": "BUSY", "classifier_verdict": "BUSY"}, True, True),  # kept awake, and slept all the same
    # a prompt nobody answered (or the ceiling reached): not kept awake, the job still running
    ({"verdict": "IDLE", "classifier_verdict": "BUSY", "suppressed": True}, True, True),
    # the user's Let it sleep: their answer, not lost work
    ({"verdict": "IDLE", "classifier_verdict": "BUSY", "suppressed": True, "let_sleep": True}, True, False),
    ({"verdict": "IDLE", "classifier_verdict": "IDLE"}, True, False),  # nothing running: it simply slept
    ({"verdict": "BUSY", "classifier_verdict": "BUSY"}, False, False),  # a host that never sleeps
])
def test_a_box_that_went_to_sleep_under_a_running_job(fields, sleeps, expected) -> None:  # type: ignore[no-untyped-def]
    """The lost-work notice's rule for a box seen going to sleep: a job of its span still running, kept awake or
    not (an unanswered prompt let it sleep), unless the user said Let it sleep."""
    assert under_running_job(make_status(**fields), sleeps=sleeps) is expected
    assert under_running_job(None, sleeps=sleeps) is False
