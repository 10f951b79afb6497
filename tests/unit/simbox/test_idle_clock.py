"""The vmd idle rule on a fake clock: counters and proxy events reset it; a silent window is due."""

from __future__ import annotations

import pytest
from simbox.idle_clock import IdleClock

pytestmark = pytest.mark.unit


def test_silent_window_is_due_exactly_at_window() -> None:
    c = IdleClock(window=5.0, now=100.0)
    c.sample(10, 10, 100.0)
    for t in (101.0, 102.0, 103.0, 104.0, 104.999):
        c.sample(10, 10, t)
        assert not c.due(t)
    assert c.due(105.0)
    assert c.idle_for(105.0) == pytest.approx(5.0)


def test_first_reading_is_a_baseline_not_activity() -> None:
    c = IdleClock(window=5.0, now=0.0)
    assert c.sample(1234, 99, 3.0) is False
    assert c.last_byte_at is None
    assert c.due(5.0)


@pytest.mark.parametrize(("rx", "tx"), [(11, 10), (10, 11), (9, 10)])
def test_any_counter_movement_resets_the_clock(rx: int, tx: int) -> None:
    c = IdleClock(window=5.0, now=0.0)
    c.sample(10, 10, 0.0)
    assert c.sample(rx, tx, 4.0) is True
    assert c.last_byte_at == 4.0
    assert c.last_activity_reason == "bytes"
    assert not c.due(8.9)
    assert c.due(9.0)


def test_proxy_events_count_at_start_and_end_not_while_open() -> None:
    """An open but silent connection does not keep the box awake (docs/simbox.md, "The rule")."""
    c = IdleClock(window=5.0, now=0.0)
    c.touch(1.0, "proxy connect")
    # the connection stays open and silent: nothing calls touch, the window runs out
    assert c.due(6.0)
    c.touch(6.0, "proxy disconnect")
    assert not c.due(10.9)
    assert c.last_activity_reason == "proxy disconnect"


def test_nothing_resets_a_sleeping_box_and_wake_starts_a_fresh_window() -> None:
    c = IdleClock(window=5.0, now=0.0)
    c.sample(10, 10, 0.0)
    c.mark_asleep()
    assert not c.due(100.0)  # already asleep: never due again
    c.touch(50.0, "proxy disconnect")  # a torn-down connection's end
    assert c.sample(12, 10, 51.0) is True  # an RST moved the counters
    assert c.last_activity == 0.0  # ... but the clock did not move
    assert c.last_byte_at == 51.0
    c.mark_awake(60.0, "wake: proxy connect")
    assert not c.asleep
    assert c.sample(12, 10, 61.0) is False  # the baseline followed while asleep: no stale movement
    assert not c.due(64.9)
    assert c.due(65.0)


def test_an_older_event_never_moves_the_clock_backwards() -> None:
    c = IdleClock(window=5.0, now=10.0)
    c.touch(8.0, "late")
    assert c.last_activity == 10.0


@pytest.mark.parametrize("window", [0.0, -1.0, float("nan")])
def test_window_must_be_positive(window: float) -> None:
    with pytest.raises(ValueError, match="idle window"):
        IdleClock(window=window, now=0.0)


def test_request_metering_ignores_bytes_but_counts_requests() -> None:
    """Request metering: the guest's own traffic does not count, only requests through the endpoint proxy."""
    c = IdleClock(window=5.0, now=0.0, count_bytes=False)
    c.sample(10, 10, 0.0)
    assert c.sample(500, 900, 3.0) is True  # moved, and recorded for the page ...
    assert c.last_byte_at == 3.0
    assert c.due(5.0)  # ... but it did not reset the clock
    c.touch(5.0, "request start")
    c.touch(5.2, "request end")
    assert not c.due(10.1) and c.due(10.25)
