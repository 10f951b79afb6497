"""KeepAwake policy and its state machine (docs/providers.md), driven with a simulated clock."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from workroom.core.keepawake import (
    DEFAULT_KEEP_AWAKE_INTERVAL_SECONDS,
    DEFAULT_TOLERATED_ERRORS,
    MIN_IDLE_WINDOW_SECONDS,
    MIN_KEEP_AWAKE_INTERVAL_SECONDS,
    Act,
    Cannot,
    CheckAt,
    Finished,
    GaveUp,
    KeepAwakeEnd,
    KeepAwakeError,
    KeepAwakePolicy,
    KeepAwakePolicyError,
    KeepAwakeState,
    Pace,
    PollOutcome,
    PollOutcomeKind,
    plan,
)
from workroom.core.metering import NotKeptAwakeReason

pytestmark = pytest.mark.unit

windows = st.floats(min_value=3 * MIN_KEEP_AWAKE_INTERVAL_SECONDS, max_value=7 * 86400)


@given(window=windows)
def test_default_interval_is_a_third_of_the_window_capped(window: float) -> None:
    policy = KeepAwakePolicy.new(idle_window_seconds=window).validate()
    assert policy.interval_seconds == min(window / 3, DEFAULT_KEEP_AWAKE_INTERVAL_SECONDS)
    assert policy.interval_seconds <= window / 2
    assert not policy.window_assumed


def test_unknown_window_assumes_the_platform_minimum() -> None:
    policy = KeepAwakePolicy.new().validate()
    assert policy.window_assumed and policy.idle_window_seconds == MIN_IDLE_WINDOW_SECONDS
    assert policy.interval_seconds == MIN_IDLE_WINDOW_SECONDS / 3
    assert policy.tolerated_errors == DEFAULT_TOLERATED_ERRORS
    with pytest.raises(KeepAwakePolicyError, match="assumed"):
        KeepAwakePolicy.new(interval_seconds=MIN_IDLE_WINDOW_SECONDS / 2 + 1).validate()


@given(window=windows, interval=st.floats(allow_nan=True, allow_infinity=True))
def test_validate_accepts_exactly_intervals_up_to_half_the_window(window: float, interval: float) -> None:
    policy = KeepAwakePolicy.new(idle_window_seconds=window, interval_seconds=interval)
    good = math.isfinite(interval) and MIN_KEEP_AWAKE_INTERVAL_SECONDS <= interval <= window / 2
    if good:
        assert policy.validate() is policy
    else:
        with pytest.raises(KeepAwakePolicyError) as caught:
            policy.validate()
        assert caught.value.title and caught.value.hint


@given(window=st.one_of(st.floats(max_value=0), st.just(math.nan), st.just(math.inf)))
def test_bad_windows_are_refused(window: float) -> None:
    with pytest.raises(KeepAwakePolicyError, match="idle window"):
        KeepAwakePolicy(idle_window_seconds=window, interval_seconds=1).validate()


@pytest.mark.parametrize("tolerated", [-1, True, 1.5])
def test_bad_tolerated_errors_are_refused(tolerated: object) -> None:
    with pytest.raises(KeepAwakePolicyError, match="olerated"):
        KeepAwakePolicy.new(tolerated_errors=tolerated).validate()  # type: ignore[arg-type]


def drive(
    policy: KeepAwakePolicy, outcomes: list[PollOutcome], poll_takes: float = 0.5, start: float = 100.0,
    kept_until: float = math.inf,
) -> tuple[KeepAwakeState, list[float], Finished | GaveUp]:
    """Run the state machine as the async runner would, on a simulated clock; returns poll start times."""
    now = start
    state = KeepAwakeState.begin(policy, now)
    polls: list[float] = []
    feed = iter(outcomes)
    for _ in range(10_000):
        state, action = state.next_action(now, kept_until)
        if isinstance(action, CheckAt):
            assert action.at > now
            now = action.at
        elif isinstance(action, Act):
            outcome = next(feed, None)
            if outcome is None:
                return state.stop(), polls, Finished(state.stop().report())
            started = now
            if outcome.kind is not PollOutcomeKind.NOT_RUNNING:
                polls.append(started)
            now += poll_takes
            state, action = state.on_poll_result(outcome, started, kept_until)
            if isinstance(action, Finished | GaveUp):
                return state, polls, action
        else:
            return state, polls, action
    raise AssertionError("state machine did not finish")


def test_polls_at_once_then_every_interval_until_no_longer_busy() -> None:
    policy = KeepAwakePolicy.new(idle_window_seconds=30)
    _, polls, action = drive(policy, [PollOutcome.busy()] * 3 + [PollOutcome.not_busy()])
    assert polls == [100.0, 110.0, 120.0, 130.0]
    assert isinstance(action, Finished)
    assert action.report.polls == 4 and action.report.ended is KeepAwakeEnd.NO_LONGER_BUSY


def test_gate_closed_is_never_polled() -> None:
    policy = KeepAwakePolicy.new(idle_window_seconds=30)
    _, polls, action = drive(policy, [PollOutcome.busy(), PollOutcome.not_running(), PollOutcome.busy()])
    assert polls == [100.0]
    assert isinstance(action, Finished) and action.report.ended is KeepAwakeEnd.GATE_CLOSED


def test_tolerated_failures_then_an_error() -> None:
    policy = KeepAwakePolicy.new(idle_window_seconds=30, tolerated_errors=2)
    fail = PollOutcome.failed("HTTP 502")
    _, polls, action = drive(policy, [fail, fail, PollOutcome.busy(), fail, fail, fail, PollOutcome.busy()])
    assert isinstance(action, GaveUp)
    assert len(polls) == 6
    error = action.error
    assert isinstance(error, KeepAwakeError) and "HTTP 502" in error.message
    assert error.report.failures == 5 and error.report.polls == 6 and error.report.ended is None


def test_a_non_retryable_failure_ends_at_once() -> None:
    policy = KeepAwakePolicy.new(idle_window_seconds=30)
    _, polls, action = drive(policy, [PollOutcome.failed("401 unauthorized", retryable=False)])
    assert isinstance(action, GaveUp) and len(polls) == 1


def test_the_agents_ceiling_ends_it_and_no_poll_keeps_the_box_past_it_but_by_a_window() -> None:
    """The agent means to keep the box up until 125 (its awake ceiling): the poll at 100 gives it a window to 130,
    which covers 125, so no other poll is made; at 125 it ends (a poll at 110 or 120 kept it up to 140 or 150)."""
    _, polls, action = drive(KeepAwakePolicy.new(idle_window_seconds=30), [PollOutcome.busy()] * 100,
                             kept_until=125.0)
    assert polls == [100.0]
    assert isinstance(action, Finished) and action.report.ended is KeepAwakeEnd.DEADLINE
    _, polls, _ = drive(KeepAwakePolicy.new(idle_window_seconds=30), [PollOutcome.busy()] * 100, kept_until=145.0)
    assert polls == [100.0, 110.0, 120.0]  # 120 + 30 covers 145


def test_both_ways_of_keeping_a_box_up_are_rows_of_one_planner() -> None:
    """The outside poll and a platform's extension: act a lead before the stop, never past what the agent means
    to keep but by the row's shortest act, look again on the row's cadence."""
    poll = KeepAwakePolicy.new(idle_window_seconds=30).pace  # every 10 s, a whole window each
    assert plan(poll, now=100.0, stops_at=100.0, kept_until=math.inf) == Act(130.0, 0.0)
    assert plan(poll, now=105.0, stops_at=130.0, kept_until=math.inf) == CheckAt(110.0)
    assert plan(poll, now=110.0, stops_at=130.0, kept_until=130.0) == CheckAt(120.0)  # covered: no act
    assert plan(poll, now=110.0, stops_at=130.0, kept_until=135.0) == Act(140.0, 5.0)  # a window past it
    assert plan(poll, now=110.0, stops_at=130.0, kept_until=200.0) == Act(140.0, 0.0)
    assert plan(poll, now=110.0, stops_at=130.0, kept_until=110.0) == Cannot(NotKeptAwakeReason.AWAKE_CEILING_REACHED)
    extension = Pace(lead=600.0, step=1800.0, min_step=1800.0, recheck=60.0, grain=1.0)
    assert plan(extension, now=0.0, stops_at=500.0, kept_until=500.0) == CheckAt(60.0)  # covered
    assert plan(extension, now=0.0, stops_at=500.0, kept_until=700.0) == Act(1800.0, 1100.0)
    assert plan(extension, now=0.0, stops_at=500.0, kept_until=9000.0, maximum=2000.0) == Act(1800.0, 0.0)
    assert plan(extension, now=0.0, stops_at=500.0, kept_until=9000.0, maximum=1000.0) == \
        Cannot(NotKeptAwakeReason.PLATFORM_MAXIMUM)  # under the platform's shortest step


@given(lead=st.floats(0, 1000), step=st.floats(1, 5000), recheck=st.floats(0.1, 1000), now=st.floats(0, 1e6),
       ahead=st.floats(-100, 5000), keep=st.floats(0.1, 1e5))
def test_the_planner_never_acts_early_nor_past_what_is_kept_but_by_its_shortest_act(
        lead: float, step: float, recheck: float, now: float, ahead: float, keep: float) -> None:
    pace = Pace(lead=lead, step=step, min_step=step, recheck=recheck)
    stops_at, kept_until = now + ahead, now + keep
    match plan(pace, now=now, stops_at=stops_at, kept_until=kept_until):
        case Act(until=until, passes_ceiling_by=past):
            assert stops_at - lead <= now and stops_at < kept_until  # due, and not covered yet
            assert until > stops_at and until <= max(kept_until, now + step) + 1e-6
            assert past == max(0.0, until - kept_until)
        case CheckAt(at=at):
            assert now < at <= now + recheck + 1e-6
        case Cannot():
            raise AssertionError("kept_until is ahead: never a refusal without a maximum")


def test_stop_is_final() -> None:
    state = KeepAwakeState.begin(KeepAwakePolicy.new(idle_window_seconds=30), 0.0).stop()
    state, action = state.next_action(1.0)
    assert isinstance(action, Finished) and action.report.ended is KeepAwakeEnd.STOPPED
    state, action = state.on_poll_result(PollOutcome.busy(), 2.0)
    assert isinstance(action, Finished) and action.report.polls == 0
    assert state.stop() is state


def test_begin_refuses_an_invalid_policy() -> None:
    with pytest.raises(KeepAwakePolicyError):
        KeepAwakeState.begin(KeepAwakePolicy.new(idle_window_seconds=10, interval_seconds=6), 0.0)


outcomes = st.lists(
    st.sampled_from([PollOutcome.busy(), PollOutcome.not_busy(), PollOutcome.failed("boom"),
                     PollOutcome.not_running()]),
    max_size=40,
)


@given(window=st.floats(min_value=1, max_value=3600), sequence=outcomes,
       tolerated=st.integers(0, 5), poll_takes=st.floats(min_value=0, max_value=100))
def test_state_machine_invariants(
    window: float, sequence: list[PollOutcome], tolerated: int, poll_takes: float
) -> None:
    policy = KeepAwakePolicy.new(idle_window_seconds=window, tolerated_errors=tolerated)
    state, polls, action = drive(policy, sequence, poll_takes=poll_takes)
    # Never a gap longer than the interval plus one slow poll, so never one longer than the window
    # when polls are quick.
    gaps = [b - a for a, b in itertools.pairwise(polls)]
    assert all(gap >= policy.interval_seconds - 1e-9 for gap in gaps)
    assert all(gap <= max(policy.interval_seconds, poll_takes) + 1e-6 for gap in gaps)
    report = state.report()
    assert report.polls == len(polls)
    assert report.failures == sum(1 for o in sequence[: len(polls)] if o.kind is PollOutcomeKind.FAILED)
    gate_index = next((i for i, o in enumerate(sequence) if o.kind is PollOutcomeKind.NOT_RUNNING), None)
    if gate_index is not None:
        assert len(polls) <= gate_index  # nothing polled at or after the gate closed
    if isinstance(action, GaveUp):
        assert state.consecutive_failures > tolerated or tolerated < 0
