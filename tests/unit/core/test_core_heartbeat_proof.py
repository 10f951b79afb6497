"""Judging the provider's idle clock: confirmed, not seen, or unconfirmed — never "confirmed" without proof."""

from __future__ import annotations

import pytest
from workroom.core.heartbeat_proof import (
    CANNOT_READ,
    HeartbeatProof,
    IdleClockReading,
    ProofState,
    judge,
    margin_for,
    next_read_in,
    notification,
    window_too_short,
)

pytestmark = pytest.mark.unit

INTERVAL = 20.0
LIMIT = INTERVAL + margin_for(INTERVAL)  # 25 s


def read(idle: float, at: float = 1000.0, window: float | None = 60.0) -> IdleClockReading:
    return IdleClockReading(idle_seconds=idle, window_seconds=window, read_at=at)


def test_a_reset_within_one_interval_that_is_not_ours_confirms() -> None:
    proof = judge(read(7), interval_seconds=INTERVAL, own_traffic_at=900.0, previous=None)
    assert proof.state is ProofState.CONFIRMED and proof.confirmed is True
    assert proof.last_seen_at == 993.0 and proof.last_seen_age(1003.0) == 10.0


def test_past_one_interval_plus_the_margin_is_not_seen_with_the_numbers() -> None:
    proof = judge(read(41), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
    assert proof.state is ProofState.NOT_SEEN and proof.confirmed is False
    assert proof.why == "The provider is not seeing the heartbeat (idle 41 s of a 60 s window)."
    just_under = judge(read(LIMIT - 0.1), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
    assert just_under.state is ProofState.CONFIRMED


def test_a_reset_our_own_traffic_explains_proves_nothing() -> None:
    ours = judge(read(3), interval_seconds=INTERVAL, own_traffic_at=996.5, previous=None)
    assert ours.state is ProofState.UNCONFIRMED and ours.confirmed is None
    assert "Confirmed" not in ours.why
    confirmed = judge(read(5, at=900.0), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
    kept = judge(read(3), interval_seconds=INTERVAL, own_traffic_at=996.5, previous=confirmed)
    assert kept.state is ProofState.CONFIRMED and kept.read_at == 1000.0  # keeps the verdict, fresh numbers
    # ... but it never hides a clock that has passed the limit
    late = judge(read(30), interval_seconds=INTERVAL, own_traffic_at=970.5, previous=confirmed)
    assert late.state is ProofState.NOT_SEEN


def test_a_provider_that_cannot_be_read_is_unconfirmed() -> None:
    assert CANNOT_READ.confirmed is None and CANNOT_READ.why.startswith("Unconfirmed")


@pytest.mark.parametrize(("window", "short"), [(3.0, True), (LIMIT, True), (LIMIT + 0.5, False)])
def test_a_window_too_short_to_notice_a_miss_says_so(window: float, short: bool) -> None:
    result = window_too_short(window, INTERVAL)
    assert (result is not None) is short
    if result is not None:
        assert result.confirmed is None and "could sleep before the app notices" in result.why
        judged = judge(read(1, window=window), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
        assert judged == result


def test_reads_are_due_just_as_the_clock_would_pass_the_limit() -> None:
    proof = judge(read(5), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
    assert next_read_in(proof, interval_seconds=INTERVAL, now=1000.0) == pytest.approx(LIMIT - 5 + 0.05)
    assert next_read_in(proof, interval_seconds=INTERVAL, now=1000.0 + LIMIT) == 1.0  # overdue: the minimum
    unseen = judge(read(41), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
    assert next_read_in(unseen, interval_seconds=INTERVAL, now=1000.0) == INTERVAL / 4
    unsure = judge(read(1), interval_seconds=INTERVAL, own_traffic_at=999.5, previous=None)
    assert next_read_in(unsure, interval_seconds=INTERVAL, now=1000.0) == INTERVAL / 4


def test_notification_once_when_it_stops_being_seen_with_the_time_left() -> None:
    unseen = judge(read(41), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
    confirmed = judge(read(5), interval_seconds=INTERVAL, own_traffic_at=None, previous=None)
    note = notification("build-box", unseen, confirmed, now=1001.0)
    assert note is not None
    title, message = note
    assert title == "build-box: busy but not kept awake"
    assert "not seeing the heartbeat" in message and "put to sleep in 18 s" in message
    assert notification("build-box", unseen, unseen, now=1002.0) is None
    assert notification("build-box", confirmed, None, now=1002.0) is None
    assert notification("build-box", None, unseen, now=1002.0) is None


def test_readings_are_checked() -> None:
    with pytest.raises(ValueError):
        IdleClockReading(idle_seconds=-1, read_at=0)
    with pytest.raises(ValueError):
        IdleClockReading(idle_seconds=float("nan"), read_at=0)
    assert isinstance(CANNOT_READ, HeartbeatProof)
