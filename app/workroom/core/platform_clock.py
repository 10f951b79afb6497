"""A platform's own clock for a box (docs/providers.md, "Coder and Codespaces"): what its list says, read through
the user's CLI without touching the box, and the pure rules the app keeps a busy box up by.

Where an open session is activity and the platform stops the box at a deadline (metering `sessions`), the app
never holds a session on an idle box, extends a busy box's deadline through the platform's own call before it
passes (never past the awake ceiling but by the platform's minimum step), and says when the platform will stop
the box ("stops in 12 min"). Everything here is data and arithmetic on Unix seconds; the providers read the
clock (providers/platform_cli.py) and the session drives the rules (sessions/platform_keeper.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from workroom.core.durations import format_duration
from workroom.core.keepawake import Cannot, CheckAt, Pace, Plan, plan
from workroom.core.metering import NotKeptAwakeReason

STOP_WARNING_SECONDS = 5 * 60.0
"""A busy box its platform will stop, and the app will not keep up: the notification comes this long before."""


class PlatformState(StrEnum):
    """Where the platform says the box stands, in the app's words (each platform's own word is kept beside it)."""

    RUNNING = "running"
    STOPPED = "stopped"
    STARTING = "starting"
    STOPPING = "stopping"
    FAILED = "failed"
    DELETED = "deleted"
    UNKNOWN = "unknown"
    """The platform's answer could not be read, or names a state the app does not know: never a guess."""


class PlatformClock(BaseModel):
    """One reading of the platform's list for one box. Times are Unix seconds (the platform's wall clock)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: PlatformState
    said: str = Field(max_length=300)
    """The platform's own words for it ("running", "Available"), or why it could not be read ("coder says: You
    are not logged in"): already plain text, cut."""
    read_at: float
    deadline: float | None = None
    """When the platform stops the box unless activity or an extension moves it (None: no deadline now)."""
    max_deadline: float | None = None
    """The platform's own limit: no extension passes it (None: none)."""
    idle_timeout_seconds: float | None = None
    """How long without activity the platform lets the box run (where it keeps no deadline: Codespaces)."""
    last_used: float | None = None
    build: str | None = None
    """The platform's identity of the box's current run (a build number): a new one means it was (re)started."""
    stop_reason: str | None = None
    """Why its last stop happened, in words, where the platform says (Coder's build reason, a stop notice)."""
    stopped_at: float | None = None
    can_extend: bool = False
    """The platform has an extend call (Coder) and a deadline the app can extend (read, in range, not past);
    elsewhere the session's own traffic is the keep-alive."""
    odd_times: str | None = Field(default=None, max_length=300)
    """The platform gave a time the app cannot take (not a time, NaN, before 2015, years ahead), in words: that
    time is unknown, never "no deadline" (the platform's own null or Go's zero time)."""

    @property
    def readable(self) -> bool:
        return self.state is not PlatformState.UNKNOWN


@dataclass(frozen=True)
class PlatformRules:
    """How the app paces its keep-alive on one platform. `scaled` is for tests on a compressed clock."""

    min_extension_seconds: float
    """The shortest extension the platform takes (Coder: 30 min from now)."""
    extend_step_seconds: float
    """How far one extension reaches (never past the ceiling but by `min_extension_seconds`)."""
    lead_seconds: float
    """Extend when the deadline is this close."""
    read_interval_seconds: float
    """The slow cadence of list reads while the app keeps a busy box up, or watches one it let go of."""
    release_after_seconds: float
    """How long an IDLE verdict holds before the app lets go of its session."""
    outside_use_grace_seconds: float
    """After the app lets go, the platform may still record the app's own session as use for this long."""
    start_timeout_seconds: float
    """How long an explicit wake waits for the platform's start to finish."""

    def scaled(self, factor: float) -> PlatformRules:
        """These rules on a clock `factor` times faster (tests: a deadline-minute in a second)."""
        return PlatformRules(*(value / factor for value in (
            self.min_extension_seconds, self.extend_step_seconds, self.lead_seconds, self.read_interval_seconds,
            self.release_after_seconds, self.outside_use_grace_seconds,
            self.start_timeout_seconds)))

    def with_release_after(self, seconds: float) -> PlatformRules:
        return replace(self, release_after_seconds=seconds)

    @property
    def pace(self) -> Pace:
        """The platform's deadline as a row of the planner: extend a lead before it, by a step (never less than
        the platform's shortest), reading its list again on the slow cadence; its times are whole seconds."""
        return Pace(lead=self.lead_seconds, step=self.extend_step_seconds, min_step=self.min_extension_seconds,
                    recheck=self.read_interval_seconds, grain=1.0)


def plan_extension(clock: PlatformClock, *, now: float, kept_until: float, rules: PlatformRules) -> Plan:
    """What to do for a busy box the agent means to keep up until `kept_until` (its awake ceiling, or a pending
    prompt's deadline): the planner's row for the platform's deadline (core.keepawake.plan), once the clock says
    there is a deadline the app can extend; `Act` is an extension, and `Cannot` says why in the platform's words."""
    if not clock.readable:
        return Cannot(NotKeptAwakeReason.PLATFORM_UNREADABLE, clock.said)
    if clock.odd_times is not None and clock.idle_timeout_seconds is None:
        # A stop time or limit it cannot mean: nothing is extended on it (and it is never "no deadline").
        return Cannot(NotKeptAwakeReason.PLATFORM_UNREADABLE, f"its stop time is not known: {clock.odd_times}")
    if not clock.can_extend or clock.deadline is None:
        return CheckAt(now + rules.read_interval_seconds)  # no deadline to keep (or the session's traffic does)
    step = plan(rules.pace, now=now, stops_at=clock.deadline, kept_until=kept_until, maximum=clock.max_deadline)
    if isinstance(step, Cannot):
        if step.reason is NotKeptAwakeReason.PLATFORM_MAXIMUM:
            return Cannot(step.reason, f"{MAXIMUM_WORDS}: it {stops_words(clock, now)} whatever the app asks")
        return Cannot(step.reason, f"it is past its awake ceiling, so the app no longer extends it; "
                                   f"the platform {stops_words(clock, now)}")
    return step


def at_its_maximum(clock: PlatformClock, kept_for: float) -> bool:
    """The platform's limit for this run is reached: its deadline is its maximum, and the agent means to keep the
    box up past it (`kept_for`: seconds from the clock's reading). Told from the reading alone, so every face says
    it from the first reading on, before the keeper has planned anything."""
    return (clock.state is PlatformState.RUNNING and clock.odd_times is None and clock.deadline is not None
            and clock.max_deadline is not None and clock.max_deadline <= clock.deadline + 1.0
            and clock.read_at + kept_for > clock.deadline + 1.0)


MAXIMUM_WORDS = "the platform's maximum for this run is reached"


def stops_in(clock: PlatformClock, now: float) -> float | None:
    """Seconds until the platform stops the box as things stand (None: it keeps no deadline)."""
    if clock.state is not PlatformState.RUNNING or clock.deadline is None:
        return None
    return max(0.0, clock.deadline - now)


def stops_words(clock: PlatformClock, now: float) -> str:
    """"stops in 12 min", "stops any moment now", or what the platform keeps instead of a deadline."""
    left = stops_in(clock, now)
    if left is None:
        if clock.state is PlatformState.RUNNING and clock.idle_timeout_seconds is not None:
            return f"stops {format_duration(clock.idle_timeout_seconds)} after the last activity"
        if clock.state is PlatformState.RUNNING and clock.odd_times is not None:
            return f"stops at a time not known: {clock.odd_times}"
        if clock.state is PlatformState.RUNNING:
            return "keeps no stop time"
        return f"is {clock.said}"
    if left < 1.0:
        return "stops any moment now"
    return f"stops in {format_duration(left if left < 120 else 60 * (left // 60))}"  # whole minutes past two


def clock_words(clock: PlatformClock, now: float, *, ceiling_seconds: float | None = None) -> str:
    """The platform's clock in a line for the row, tray and CLI: its stop time, its maximum beside the ceiling
    ("stops in 12 min; at most 7 h more by the platform's limit, awake ceiling 4 h"), never a bracket of its own (a
    face may put the line in one)."""
    if not clock.readable:
        return f"unknown: {clock.said}"
    words = stops_words(clock, now)
    if clock.odd_times is not None and clock.deadline is not None:
        words += f"; its limit is not known: {clock.odd_times}"
    elif clock.max_deadline is not None and clock.state is PlatformState.RUNNING:
        most = format_duration(max(0.0, clock.max_deadline - now))
        words += f"; at most {most} more by the platform's limit"
        words += f", awake ceiling {format_duration(ceiling_seconds)}" if ceiling_seconds is not None else ""
    return words


def stop_words(clock: PlatformClock) -> str | None:
    """When and why the platform last stopped the box, where it says ("stopped by its deadline (autostop)")."""
    if clock.state is not PlatformState.STOPPED or clock.stop_reason is None:
        return None
    return f"the platform stopped it: {clock.stop_reason}"
