"""The platform's clock and the rules a busy box is kept up by (core.platform_clock): extend before the
deadline, never past the awake ceiling but by the platform's minimum step, never past its maximum."""

from __future__ import annotations

import pytest
from workroom.core.keepawake import Act, Cannot, CheckAt
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.platform_clock import (
    PlatformClock,
    PlatformRules,
    PlatformState,
    clock_words,
    plan_extension,
    stop_words,
    stops_words,
)

pytestmark = pytest.mark.unit

MIN = 60.0
RULES = PlatformRules(min_extension_seconds=30 * MIN, extend_step_seconds=30 * MIN, lead_seconds=10 * MIN,
                      read_interval_seconds=MIN, release_after_seconds=3, outside_use_grace_seconds=3 * MIN,
                      start_timeout_seconds=10 * MIN)
NOW = 1_000_000.0


def running(deadline: float | None, max_deadline: float | None = None, **more: object) -> PlatformClock:
    return PlatformClock(state=PlatformState.RUNNING, said="running", read_at=NOW, deadline=deadline,
                         max_deadline=max_deadline, can_extend=deadline is not None, **more)  # type: ignore[arg-type]


def test_nothing_is_asked_while_the_deadline_is_further_than_the_lead() -> None:
    plan = plan_extension(running(NOW + 40 * MIN), now=NOW, kept_until=NOW + 4 * 3600, rules=RULES)
    assert plan == CheckAt(NOW + MIN)  # the list is read again on its cadence, before the lead comes


def test_a_near_deadline_is_extended_by_one_step() -> None:
    plan = plan_extension(running(NOW + 9 * MIN), now=NOW, kept_until=NOW + 4 * 3600, rules=RULES)
    assert plan == Act(NOW + 30 * MIN, 0.0)


def test_an_extension_never_passes_the_ceiling_but_by_the_minimum() -> None:
    plan = plan_extension(running(NOW + 5 * MIN), now=NOW, kept_until=NOW + 12 * MIN, rules=RULES)
    assert plan == Act(NOW + 30 * MIN, 18 * MIN)  # the platform takes 30 min at least: 18 min past the ceiling
    close = plan_extension(running(NOW + 5 * MIN), now=NOW, kept_until=NOW + 40 * MIN, rules=RULES)
    assert close == Act(NOW + 30 * MIN, 0.0)


def test_a_deadline_that_covers_the_ceiling_is_left_alone() -> None:
    plan = plan_extension(running(NOW + 5 * MIN), now=NOW, kept_until=NOW + 4 * MIN, rules=RULES)
    assert isinstance(plan, CheckAt)


def test_past_the_ceiling_nothing_is_extended() -> None:
    plan = plan_extension(running(NOW + 5 * MIN), now=NOW, kept_until=NOW - 1, rules=RULES)
    assert isinstance(plan, Cannot) and plan.reason is NotKeptAwakeReason.AWAKE_CEILING_REACHED
    assert "stops in 5 min" in plan.words


def test_the_platforms_maximum_caps_and_then_stops_the_extensions() -> None:
    capped = plan_extension(running(NOW + 5 * MIN, NOW + 50 * MIN), now=NOW, kept_until=NOW + 4 * 3600,
                            rules=RULES.scaled(1))
    assert capped == Act(NOW + 30 * MIN, 0.0)
    at_most = plan_extension(running(NOW + 5 * MIN, NOW + 20 * MIN), now=NOW, kept_until=NOW + 4 * 3600,
                             rules=RULES)
    assert isinstance(at_most, Cannot) and at_most.reason is NotKeptAwakeReason.PLATFORM_MAXIMUM


def test_an_unreadable_platform_keeps_nothing_and_says_why() -> None:
    clock = PlatformClock(state=PlatformState.UNKNOWN, said="coder says: You are not logged in", read_at=NOW)
    plan = plan_extension(clock, now=NOW, kept_until=NOW + 3600, rules=RULES)
    assert plan == Cannot(NotKeptAwakeReason.PLATFORM_UNREADABLE, "coder says: You are not logged in")
    assert clock_words(clock, NOW) == "unknown: coder says: You are not logged in"


def test_a_platform_without_an_extend_call_is_only_watched() -> None:
    clock = running(None, idle_timeout_seconds=30 * MIN)
    assert plan_extension(clock, now=NOW, kept_until=NOW + 3600, rules=RULES) == CheckAt(NOW + MIN)
    assert stops_words(clock, NOW) == "stops 30 min after the last activity"


def test_words_for_the_row_and_the_cli() -> None:
    clock = running(NOW + 12 * MIN, NOW + 8 * 3600)
    assert clock_words(clock, NOW, ceiling_seconds=4 * 3600) == \
        "stops in 12 min; at most 8 h more by the platform's limit, awake ceiling 4 h"
    stopped = PlatformClock(state=PlatformState.STOPPED, said="stopped", read_at=NOW,
                            stop_reason="it reached its deadline (autostop)")
    assert stop_words(stopped) == "the platform stopped it: it reached its deadline (autostop)"


def test_rules_scale_together() -> None:
    fast = RULES.scaled(60)
    assert (fast.min_extension_seconds, fast.lead_seconds, fast.read_interval_seconds) == (30.0, 10.0, 1.0)
    assert fast.with_release_after(3).release_after_seconds == 3


def test_the_record_keeps_the_platforms_stop_and_the_let_go_across_runs() -> None:
    from workroom.core.last_known import LastKnown

    known = LastKnown().platform_stopped(NOW - 7200, "it reached its deadline (autostop)").let_go(NOW - 9000, "7")
    again = LastKnown.from_record(known.to_record())
    assert again == known
    assert again.stop_note(NOW - 86400, NOW) == "the platform stopped it 2 h ago: it reached its deadline (autostop)"
    assert again.stop_note(NOW - 3600, NOW) is None  # before the window
    assert LastKnown.from_record({"verdict": "IDLE", "run": 7, "released_at": "soon"}).run is None  # never an error
    assert again.asleep(NOW).released_at is None  # stopped: nothing to let go of any more
