"""Times with one meaning each (core.box_times): busy for, ceiling used, asleep in about."""

from __future__ import annotations

import pytest
from status_factory import busy_dict, status_dict
from workroom.core import box_times
from workroom.core.heartbeat_proof import IdleClockReading
from workroom.core.protocol import Status
from workroom.core.traits import BOXD_TRAITS, SSH_TRAITS

pytestmark = pytest.mark.unit

HOLD = {"class": "hold", "subject": "", "detail": {"after": {"class": "cpu", "subject": "sh", "pid": 5}}}
CPU = {"class": "cpu", "subject": "cc1plus", "pid": 7}


def busy(**overrides: object) -> Status:
    return Status.model_validate(busy_dict(structured_reasons=[CPU], **overrides))


def test_keep_awake_restarts_the_ceiling_never_busy_for() -> None:
    """Kept awake 2 s ago, busy for 5 min: "Busy for" says 5 min; the ceiling's clock says 2 s."""
    status = busy(monotonic=1000.0, awake_seconds=2.0, busy_seconds=300.0, ceiling_seconds=60)
    assert box_times.busy_seconds(status, 1000.0) == 300.0
    assert box_times.ceiling_used_seconds(status, 1000.0) == 2.0
    assert box_times.busy_seconds(status, 1010.0) == 310.0
    assert box_times.ceiling_restarted(status, 1000.0)


def test_idle_has_no_busy_time_and_an_older_agent_falls_back_to_the_ceiling_clock() -> None:
    idle = Status.model_validate(status_dict())
    assert box_times.busy_seconds(idle, 1000.0) is None
    assert box_times.ceiling_used_seconds(idle, 1000.0) == 0.0
    older = busy(monotonic=1000.0, awake_seconds=120.0)  # no busy_seconds
    assert box_times.busy_seconds(older, 1000.0) == 120.0
    assert not box_times.ceiling_restarted(older, 1000.0)


def test_past_ceiling_words_name_each_number() -> None:
    """"busy for 1 min 1 s past its 1 min ceiling" could be read two ways: each number says what it counts."""
    first = busy(monotonic=1000.0, awake_seconds=61.0, busy_seconds=61.0, ceiling_seconds=60)
    assert box_times.past_ceiling_words(first, 1000.0) == "busy for 1 min 1 s, longer than its 1 min awake ceiling"
    kept = busy(monotonic=1000.0, awake_seconds=61.0, busy_seconds=240.0, ceiling_seconds=60)
    assert box_times.past_ceiling_words(kept, 1000.0) == (
        "busy for 4 min, 1 min 1 s of it since its 1 min awake ceiling last restarted")
    # A restarted agent's busy span is younger than the ceiling it kept: one stretch, one number (never "busy for
    # 4 s, longer than its 45 s awake ceiling" beside "30 min 6 s of 45 s used").
    young = busy(monotonic=1000.0, awake_seconds=1806.0, busy_seconds=4.0, ceiling_seconds=45)
    assert box_times.past_ceiling_words(young, 1000.0) == (
        "busy for 30 min 6 s, longer than its 45 s awake ceiling")


def test_a_held_box_sleeps_after_the_hold_and_the_window() -> None:
    """Work ended 10 s ago with a 30 s hold and a 60 s window: asleep in about 80 s."""
    traits = BOXD_TRAITS.with_idle_window(60)
    held = Status.model_validate(busy_dict(structured_reasons=[HOLD], busy_reasons=["hold: after cpu: sh (pid 5)"],
                                           monotonic=1000.0, hold_until=1020.0))
    assert box_times.only_held(held)
    estimate = box_times.sleep_estimate(held, traits, 1000.0)
    assert estimate is not None and estimate.seconds == 80.0
    assert estimate.words() == "asleep in about 1 min 20 s"
    working = busy(monotonic=1000.0, hold_until=1030.0)
    assert not box_times.only_held(working)
    assert box_times.sleep_estimate(working, traits, 1000.0) is None


def test_an_idle_box_sleeps_when_the_providers_clock_reaches_its_window() -> None:
    traits = BOXD_TRAITS.with_idle_window(60)
    idle = Status.model_validate(status_dict(monotonic=1000.0))
    reading = IdleClockReading(idle_seconds=10.0, window_seconds=60.0, read_at=500.0)
    estimate = box_times.sleep_estimate(idle, traits, 1000.0, reading=reading, now_monotonic=505.0)
    assert estimate is not None and estimate.seconds == 45.0 and estimate.words() == "asleep in about 45 s"
    late = box_times.sleep_estimate(idle, traits, 1000.0, reading=reading, now_monotonic=600.0)
    assert late is not None and late.words() == "asleep in about 0 s"
    unread = box_times.sleep_estimate(idle, traits, 1000.0)
    assert unread is not None and unread.seconds is None
    assert unread.words() == "sleeps within its window (1 min)"
    assert box_times.sleep_estimate(idle, SSH_TRAITS, 1000.0) is None  # it never sleeps
