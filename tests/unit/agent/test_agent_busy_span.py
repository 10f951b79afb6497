"""The busy span the agent tells in the status that reports IDLE (docs/protocol.md, `last_busy_span`)."""

from __future__ import annotations

import pytest
from wr_agent import reasons
from wr_agent.busy_span import BusySpan

pytestmark = pytest.mark.unit

CC = reasons.make(reasons.CPU, "cc1plus", 41)
HELD = reasons.make(reasons.HOLD, after=CC)
CURL = reasons.make(reasons.TCP, "curl", 5)
ONLY_HELD = reasons.make(reasons.HOLD, after=reasons.make(reasons.RESTORED))


def run(span: BusySpan, ticks: list[tuple[bool, bool, list[dict[str, object]]]], start: float = 100.0,
        gap_at: int | None = None) -> float:
    now = start
    for i, (busy, published_before, said) in enumerate(ticks):
        span.step(now, busy, published_before, said, gap_at == i)
        now += 1.0
    return now


def test_a_compile_then_its_hold_is_told_with_its_work_seconds_and_class() -> None:
    span = BusySpan(1.0)
    ticks = [(True, True, [CC])] * 600 + [(True, True, [HELD])] * 30 + [(False, True, [])]
    run(span, ticks)
    assert span.last == {"ended": 730.0, "seconds": 600.0, "class": "cpu", "subject": "cc1plus", "slept": False}


def test_the_class_that_voted_longest_names_the_span() -> None:
    span = BusySpan(1.0)
    run(span, [(True, True, [CURL])] * 10 + [(True, True, [CC])] * 50 + [(False, True, [])])
    assert span.last is not None and (span.last["class"], span.last["subject"]) == ("cpu", "cc1plus")
    assert span.last["seconds"] == 60.0


def test_a_span_that_was_only_held_has_no_work_and_no_class() -> None:
    span = BusySpan(1.0)
    run(span, [(True, True, [ONLY_HELD])] * 5 + [(False, True, [])])
    assert span.last is not None and span.last["seconds"] == 0.0 and span.last["class"] == ""


def test_a_span_that_ends_suppressed_is_not_told() -> None:
    """Nobody answered the prompt: published IDLE already, so the end changes nothing a user sees."""
    span = BusySpan(1.0)
    run(span, [(True, True, [CC])] * 5 + [(False, True, [])])
    told = span.last
    run(span, [(True, True, [CC])] * 5 + [(True, False, [CC])] * 5 + [(False, False, [])], start=500.0)
    assert span.last == told


def test_a_span_the_box_slept_in_says_so() -> None:
    span = BusySpan(1.0)
    run(span, [(True, True, [CC])] * 10 + [(False, True, [])], gap_at=5)
    assert span.last is not None and span.last["slept"] is True
    run(span, [(True, True, [CC])] * 3 + [(False, True, [])], start=900.0)
    assert span.last["slept"] is False  # a new span starts clean


def test_a_hand_off_keeps_the_open_span_and_the_last_one() -> None:
    span = BusySpan(1.0)
    run(span, [(True, True, [CC])] * 3 + [(False, True, [])])
    run(span, [(True, True, [CC])] * 7, start=200.0)
    again = BusySpan(1.0)
    again.restore(span.to_state())
    assert again.last == span.last
    again.step(207.0, True, True, [CC], False)
    again.step(208.0, False, True, [], False)
    assert again.last is not None and again.last["seconds"] == 8.0 and again.last["ended"] == 208.0


@pytest.mark.parametrize("state", [{"start": "x"}, {"classes": [["cpu", "cc", "1"]]}, {"last": {"ended": 1}},
                                   {"classes": [["cpu"]]}])
def test_a_malformed_hand_off_state_is_refused(state: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        BusySpan().restore(state)
