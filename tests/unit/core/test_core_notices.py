"""What deserves a notification besides a prompt (core/notification_rules.py): "finished" from the status that reports
IDLE, lost work from the badge."""

from __future__ import annotations

from typing import Any

import pytest
from unit.core.status_factory import make_busy, make_status
from workroom.core.app_settings import NoticeSettings
from workroom.core.badge import Badge, BadgeKind
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.notification_rules import finished_note, finished_span, lost_work_reason
from workroom.core.protocol import BusySpan, Status

pytestmark = pytest.mark.unit


def span(**changes: Any) -> dict[str, Any]:
    return {"ended": 990.0, "seconds": 42 * 60.0 + 20, "class": "cpu", "subject": "cc1plus", "slept": False,
            **changes}


def idle(**changes: Any) -> Status:
    return make_status().model_copy(update={"last_busy_span": BusySpan.model_validate(span(**changes))})


def test_a_long_span_after_busy_is_finished_and_said_in_a_developers_words() -> None:
    found = finished_span(make_busy(), idle(), 600)
    assert found is not None
    assert finished_note("box1", found, sleeps=True) == (
        "box1 finished", "box1 finished — compiling for 42 min; it may sleep now.")
    assert finished_note("box1", found, sleeps=False)[1] == "box1 finished — compiling for 42 min."
    short = BusySpan.model_validate(span(seconds=45.0, **{"class": "tcp", "subject": "curl"}))
    assert finished_note("b", short, sleeps=False)[1] == "b finished — downloading for 45 s."


@pytest.mark.parametrize(("previous", "current"), [
    (None, idle()),  # nothing seen before on this link
    (make_status(), idle()),  # was not busy
    (make_busy(), make_busy()),  # still busy
    (make_busy(), make_status()),  # an agent too old to tell the span
    (make_busy(), idle(seconds=599.0)),  # shorter than asked for
    (make_busy(), idle(slept=True)),  # the box slept in it
    (make_busy(), idle(seconds=0.0, **{"class": ""})),  # only held
])
def test_not_finished(previous: Status | None, current: Status) -> None:
    assert finished_span(previous, current, 600) is None


def test_the_same_span_again_is_not_a_new_finish() -> None:
    before = make_busy().model_copy(update={"last_busy_span": BusySpan.model_validate(span())})
    assert finished_span(before, idle(), 600) is None
    assert finished_span(before, idle(ended=2000.0), 600) is not None


@pytest.mark.parametrize("reason", list(NotKeptAwakeReason))
def test_every_not_kept_awake_reason_but_an_unanswered_prompt_is_lost_work(reason: NotKeptAwakeReason) -> None:
    """An unanswered prompt is the user's answer; the awake ceiling reached on a platform's box is the ceiling the
    user set, and its stop is warned of before it comes (`stop_warning`)."""
    kind = BadgeKind.ASLEEP if reason is NotKeptAwakeReason.SLEPT_WHILE_BUSY else BadgeKind.BUSY_NOT_KEPT_AWAKE
    badge = Badge(kind=kind, label="x", tooltip="t", reason=reason)
    asked = (NotKeptAwakeReason.UNANSWERED_PROMPT, NotKeptAwakeReason.AWAKE_CEILING_REACHED)
    expected = None if reason in asked else reason
    assert lost_work_reason(badge) is expected
    assert lost_work_reason(Badge(kind=BadgeKind.BUSY, label="Busy", tooltip="t")) is None


def test_notice_settings_this_computer_and_opt_out() -> None:
    notices = NoticeSettings()
    assert notices.finished_after_seconds == 600 and notices.lost_work
    assert notices.finished_for("box1", this_computer=False)
    assert not notices.finished_for("laptop", this_computer=True)
    muted = notices.with_finished_for("box1", False)
    assert muted.finished_muted_hosts == ("box1",) and not muted.finished_for("box1", this_computer=False)
    assert muted.with_finished_for("box1", True).finished_muted_hosts == ()
    with pytest.raises(ValueError):
        NoticeSettings(finished_after_seconds=10)


def test_a_busy_box_its_platform_stops_soon_is_warned_of_once_it_is_not_kept_up() -> None:
    from workroom.core.notification_rules import stop_warning
    from workroom.core.platform_clock import PlatformClock, PlatformState

    now = 1000.0
    clock = PlatformClock(state=PlatformState.RUNNING, said="running", read_at=now, deadline=now + 240,
                          can_extend=True)
    not_kept = Badge(kind=BadgeKind.BUSY_NOT_KEPT_AWAKE, label="x", tooltip="Past its ceiling.",
                     reason=NotKeptAwakeReason.AWAKE_CEILING_REACHED)
    busy = make_busy()
    assert stop_warning("ws1", not_kept, busy, clock, now) == (
        "ws1 stops in 4 min", "ws1's platform stops in 4 min while it is busy. Past its ceiling.")
    assert stop_warning("ws1", not_kept, busy, clock, now - 120) is None  # 6 min left: not yet
    assert stop_warning("ws1", Badge(kind=BadgeKind.BUSY, label="Busy", tooltip="t"), busy, clock, now) is None
    assert stop_warning("ws1", not_kept, make_status(), clock, now) is None  # idle: nothing to lose
    assert stop_warning("ws1", not_kept, busy, clock, now + 300) is None  # past its deadline


def test_a_prompts_note_holds_no_bracket_in_a_bracket() -> None:
    """The reason is a sentence of its own: a reason's own brackets (an address, how long) are never put inside
    another bracket (docs/ui.md)."""
    from unit.core.status_factory import make_busy
    from unit.test_cli_status_words import nested_brackets
    from workroom.core.notification_rules import prompt_note

    status = make_busy(busy_reasons=["net: curl (10.0.0.5:443)"], awake_seconds=14520, ceiling_seconds=14400)
    note = prompt_note(status, status.monotonic, status.monotonic + 420)
    assert note.startswith("Busy for 4 h 2 min, longer than its 4 h awake ceiling. "), note
    assert note.endswith(" Unanswered, it is let sleep in 7 min."), note
    assert "(" in note and nested_brackets(note) == [], note
