"""What deserves a notification beyond a ceiling prompt, as pure rules over what the app already knows:
"your job finished" from the status event that reports IDLE, and "lost work" from the badge.

- Finished: a host whose agent was published BUSY goes IDLE, and the status that says so carries the span
  that just ended (`Status.last_busy_span`: how long, the main reason's class). The app never asks for the
  why-awake record for this (that request would put bytes on an idle box's wire). Not for a span that was
  only held, nor one during which the box slept; the caller passes only statuses seen on a live link, so a
  box that was asleep or offline in between is never said to have finished.
- Lost work: an episode is a run of badges with a `NotKeptAwakeReason` (busy but not kept awake: a failing
  heartbeat, a heartbeat the provider does not see, a stalled agent, ...; or asleep after its agent said
  busy). The badge's own sentences say what happened and what to do; nothing here re-derives them. A box
  awake but not kept awake because its prompt went unanswered is not lost work: the user was asked, and the
  prompt said what would happen; once it sleeps under the job still running, it is (the session's
  `under_running_job`).
"""

from __future__ import annotations

from workroom.core import box_times, heartbeat_proof
from workroom.core.badge import Badge, BadgeKind
from workroom.core.busy_reasons import reason_words
from workroom.core.durations import format_duration
from workroom.core.heartbeat_proof import HeartbeatProof
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.platform_clock import STOP_WARNING_SECONDS, PlatformClock, stops_in, stops_words
from workroom.core.protocol import BusySpan, Status, Verdict
from workroom.core.timeline import activity

NOT_LOST_WORK = frozenset({NotKeptAwakeReason.UNANSWERED_PROMPT, NotKeptAwakeReason.AWAKE_CEILING_REACHED})
"""Reasons a badge gives that are not lost work: the user was asked and did not answer, or the awake ceiling the
user set was reached (the platform's stop is warned of before it comes: `stop_warning`)."""


def span_words(span: BusySpan) -> str:
    """The span's main reason in a developer's words ("compiling"), from its class id and process; the
    same words the why-awake timeline uses (`core.timeline.activity`)."""
    return activity(span.reason_class, span.subject)


def finished_span(previous: Status | None, status: Status, min_seconds: float) -> BusySpan | None:
    """The span that just ended, when `status` (following `previous` on the same live link) reports a host
    going from BUSY to IDLE after real work of at least `min_seconds`; None otherwise."""
    if previous is None or previous.verdict is not Verdict.BUSY or status.verdict is not Verdict.IDLE:
        return None
    span = status.last_busy_span
    if span is None or span.slept or not span.reason_class or span.seconds < min_seconds:
        return None
    if previous.last_busy_span is not None and previous.last_busy_span.ended == span.ended:
        return None  # the same span as before: this IDLE did not end it
    return span


def finished_note(name: str, span: BusySpan, *, sleeps: bool) -> tuple[str, str]:
    """(title, message): "box1 finished — compiling for 42 min; it may sleep now"."""
    minutes = format_duration(round(span.seconds / 60) * 60 if span.seconds >= 60 else span.seconds)
    after = "; it may sleep now" if sleeps else ""
    return f"{name} finished", f"{name} finished — {span_words(span)} for {minutes}{after}."


def lost_work_reason(badge: Badge) -> NotKeptAwakeReason | None:
    """The lost-work episode a badge is in (None: none)."""
    if badge.reason is None or badge.reason in NOT_LOST_WORK:
        return None
    if badge.kind not in (BadgeKind.BUSY_NOT_KEPT_AWAKE, BadgeKind.ASLEEP):
        return None
    return badge.reason


def lost_work_note(name: str, badge: Badge, proof: HeartbeatProof | None, now: float) -> tuple[str, str]:
    """(title, message) for a lost-work episode: the badge's own words, which end with what to do."""
    if badge.kind is BadgeKind.ASLEEP:
        return f"{name} fell asleep while busy", badge.tooltip
    message = badge.tooltip
    if badge.reason is NotKeptAwakeReason.PROVIDER_NOT_SEEING:
        note = heartbeat_proof.notification(name, proof, None, now)
        if note is not None:  # the provider's idle clock also says how long the box has left
            message = f"{note[1]} {badge.hint}".strip()
    return f"{name}: busy but not kept awake", message


def stop_warning(name: str, badge: Badge, status: Status | None, clock: PlatformClock | None,
                 now: float) -> tuple[str, str] | None:
    """(title, message) when a busy box's platform will stop it within `STOP_WARNING_SECONDS` and nothing of the
    app's keeps it up (its badge says busy but not kept awake: past the ceiling, the platform's maximum, an
    extension failing); None otherwise. `now`: Unix seconds, as the platform's deadline."""
    if status is None or status.classifier_verdict is not Verdict.BUSY or clock is None:
        return None
    if badge.kind is not BadgeKind.BUSY_NOT_KEPT_AWAKE:
        return None
    left = stops_in(clock, now)
    if left is None or not 0.0 < left <= STOP_WARNING_SECONDS:
        return None
    when = stops_words(clock, now)
    return f"{name} {when}", f"{name}'s platform {when} while it is busy. {badge.tooltip}"


def prompt_note(status: Status, agent_now: float, deadline: float | None) -> str:
    """The ceiling prompt's notification, short (a notification is read at a glance; the card and the row's
    tooltip say the rest): how long against its ceiling, what it is busy with (a sentence of its own: a reason
    may hold its own brackets), and what happens unanswered. "Busy for 4 h 5 min, longer than its 4 h awake
    ceiling. Compiling: cc1plus. Unanswered, it is let sleep in 7 min." `deadline`: the prompt's, on the agent's
    clock (None: not known)."""
    words = box_times.past_ceiling_words(status, agent_now)
    reasons = reason_words(status, agent_now=agent_now)
    note = f"{words[:1].upper()}{words[1:]}."
    if reasons:
        note += f" {reasons[0][:1].upper()}{reasons[0][1:]}."
    if deadline is not None:
        note += f" Unanswered, it is let sleep in {format_duration(max(0.0, deadline - agent_now))}."
    return note
