"""Keeping a busy box up from this computer: the one planner, and the outside keep-awake's policy and steps.

Two ways of keeping a box up act from here, and both are rows of one planner, `plan` (docs/providers.md):
- **the outside keep-awake**: some platforms count only inbound requests through their proxy as activity; work
  inside the box does not, and the box's own loopback requests never reach the meter. So while the host is busy,
  this computer polls the agent's health endpoint through the proxy; a poll resets the box's idle clock to a whole
  window. `KeepAwakeState` drives it step by step (the async runner, elsewhere, does the waiting and polling);
- **a platform's own clock** (Coder): the platform stops the box at a deadline unless it is extended through its
  own call (core.platform_clock).
Either way the box stops at a time unless the app acts; the app acts a lead before it, never to keep the box past
the agent's `kept_until` (its awake ceiling or a pending prompt's deadline) but by the row's shortest act.

Why the outside interval is at most half the idle window: one missed poll must not let the box sleep;
with the cap, a failed or slow poll still leaves a second one inside the window. When the window
is unknown we assume the platform's smallest (`MIN_IDLE_WINDOW_SECONDS`), the only assumption that
cannot be too generous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import StrEnum

from workroom.core.errors import UserError
from workroom.core.metering import NotKeptAwakeReason

MIN_IDLE_WINDOW_SECONDS = 60.0
"""The smallest idle window a request-metered platform accepts; assumed when the window is unknown."""
DEFAULT_KEEP_AWAKE_INTERVAL_SECONDS = 60.0
"""Default cadence when none is named: a third of the window, at most this."""
DEFAULT_TOLERATED_ERRORS = 3
"""Consecutive retryable poll failures tolerated before giving up."""
MIN_KEEP_AWAKE_INTERVAL_SECONDS = 0.1
"""Shortest interval accepted, so a tiny window cannot turn the keep-awake into a flood."""


class KeepAwakeEnd(StrEnum):
    """Why a keep-awake ended without an error."""

    NO_LONGER_BUSY = "no_longer_busy"
    DEADLINE = "deadline"
    STOPPED = "stopped"
    GATE_CLOSED = "gate_closed"
    """The running gate said the box is not running (e.g. the user suspended it): never poll it awake."""


class KeepAwakePolicyError(UserError, ValueError):
    def __init__(self, message: str) -> None:
        super().__init__(
            "Keep-awake settings not usable",
            message,
            "Use an interval of at most half the idle window, or let the app choose one.",
        )


@dataclass(frozen=True)
class KeepAwakePolicy:
    """A keep-awake's policy. Build with `KeepAwakePolicy.new`, check with `validate()`."""

    idle_window_seconds: float
    """The window the interval is checked against (the assumed one when the real one is unknown)."""
    interval_seconds: float
    window_assumed: bool = False
    tolerated_errors: int = DEFAULT_TOLERATED_ERRORS

    @classmethod
    def new(
        cls,
        *,
        idle_window_seconds: float | None = None,
        interval_seconds: float | None = None,
        tolerated_errors: int = DEFAULT_TOLERATED_ERRORS,
    ) -> KeepAwakePolicy:
        """The policy for a window (None: unknown) with the default interval unless one is named.

        Does not check; call `validate()` (a named interval may be too long for the window).
        """
        assumed = idle_window_seconds is None
        window = MIN_IDLE_WINDOW_SECONDS if idle_window_seconds is None else idle_window_seconds
        interval = default_interval(window) if interval_seconds is None else interval_seconds
        return cls(
            idle_window_seconds=window,
            interval_seconds=interval,
            window_assumed=assumed,
            tolerated_errors=tolerated_errors,
        )

    def validate(self) -> KeepAwakePolicy:
        """Return self if usable, else raise `KeepAwakePolicyError` saying what is wrong."""
        window, interval = self.idle_window_seconds, self.interval_seconds
        if _not_number(window) or not math.isfinite(window) or window <= 0:
            raise KeepAwakePolicyError(f"The idle window must be a positive number of seconds: {window!r}.")
        if _not_number(interval) or not math.isfinite(interval) or interval <= 0:
            raise KeepAwakePolicyError(f"The interval must be a positive number of seconds: {interval!r}.")
        if interval < MIN_KEEP_AWAKE_INTERVAL_SECONDS:
            raise KeepAwakePolicyError(
                f"The interval ({interval:g} s) is under the shortest allowed "
                f"({MIN_KEEP_AWAKE_INTERVAL_SECONDS:g} s)."
            )
        if interval > window / 2:
            assumed = " (assumed: the real window is unknown)" if self.window_assumed else ""
            raise KeepAwakePolicyError(
                f"The interval ({interval:g} s) is more than half the idle window ({window:g} s{assumed}), "
                "so one missed poll could let the box sleep."
            )
        if isinstance(self.tolerated_errors, bool) or not isinstance(self.tolerated_errors, int):
            raise KeepAwakePolicyError(f"Tolerated errors must be a whole number: {self.tolerated_errors!r}.")
        if self.tolerated_errors < 0:
            raise KeepAwakePolicyError(f"Tolerated errors cannot be negative ({self.tolerated_errors}).")
        return self

    @property
    def pace(self) -> Pace:
        """The outside keep-awake as a row of the planner: a poll gives the box a whole window from its start,
        due an interval after the last."""
        window = self.idle_window_seconds
        return Pace(lead=window - self.interval_seconds, step=window, min_step=window,
                    recheck=self.interval_seconds)


def _not_number(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int | float)


def default_interval(window_seconds: float) -> float:
    """A third of the window, at most `DEFAULT_KEEP_AWAKE_INTERVAL_SECONDS`."""
    return min(window_seconds / 3, DEFAULT_KEEP_AWAKE_INTERVAL_SECONDS)


# The one planner ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pace:
    """One way of keeping a box up, as the planner paces it (`KeepAwakePolicy.pace`, `PlatformRules.pace`)."""

    lead: float
    """Act once the box's stop is this close."""
    step: float
    """One act carries the stop this far from now..."""
    min_step: float
    """...and never less (the platform's shortest extension; a poll's whole window), even past `kept_until`."""
    recheck: float
    """With nothing to do, look again this soon at the latest."""
    grain: float = 0.0
    """The clock's grain: a platform's times are whole seconds, so a second either way is the same time."""


@dataclass(frozen=True)
class Act:
    """Act now (poll, extend): the box's stop moves to `until`."""

    until: float
    passes_ceiling_by: float
    """How far the row's shortest act carries it past `kept_until` (0 when it does not)."""


@dataclass(frozen=True)
class CheckAt:
    """Nothing to do now; look again at `at`."""

    at: float


@dataclass(frozen=True)
class Cannot:
    """The app does not keep the box up any longer: why, in the badge's terms (and in words, where a row says)."""

    reason: NotKeptAwakeReason
    words: str = ""


Plan = Act | CheckAt | Cannot


def plan(pace: Pace, *, now: float, stops_at: float, kept_until: float, maximum: float | None = None) -> Plan:
    """What to do for a box that stops at `stops_at` unless the app acts, which the agent means to keep up until
    `kept_until`: act a lead before the stop, never past `kept_until` but by the row's shortest act, never past
    `maximum` (the platform's own limit)."""
    next_look = now + pace.recheck
    if kept_until <= now:
        return Cannot(NotKeptAwakeReason.AWAKE_CEILING_REACHED)
    due = stops_at - pace.lead
    if due > now:
        return CheckAt(min(next_look, due))
    if stops_at >= kept_until:
        return CheckAt(min(next_look, max(now + pace.grain, stops_at)))  # it stays up that long anyway
    until = max(now + pace.min_step, min(kept_until, now + pace.step))
    if maximum is not None and until > maximum:
        if maximum <= stops_at + pace.grain or maximum < now + pace.min_step:
            return Cannot(NotKeptAwakeReason.PLATFORM_MAXIMUM)
        until = maximum
    if until <= stops_at + pace.grain:
        return CheckAt(min(next_look, max(now + pace.grain, stops_at)))
    return Act(until, max(0.0, until - kept_until))


# Poll outcomes and actions ------------------------------------------------------------------


class PollOutcomeKind(StrEnum):
    BUSY = "busy"
    NOT_BUSY = "not_busy"
    NOT_RUNNING = "not_running"
    """The running gate answered instead of polling: the box is not running."""
    FAILED = "failed"


@dataclass(frozen=True)
class PollOutcome:
    """What one poll found. Build with the class methods."""

    kind: PollOutcomeKind
    error: str | None = None
    retryable: bool = True

    @classmethod
    def busy(cls) -> PollOutcome:
        return cls(PollOutcomeKind.BUSY)

    @classmethod
    def not_busy(cls) -> PollOutcome:
        return cls(PollOutcomeKind.NOT_BUSY)

    @classmethod
    def not_running(cls) -> PollOutcome:
        return cls(PollOutcomeKind.NOT_RUNNING)

    @classmethod
    def failed(cls, error: str, *, retryable: bool = True) -> PollOutcome:
        return cls(PollOutcomeKind.FAILED, error=error, retryable=retryable)


@dataclass(frozen=True)
class KeepAwakeReport:
    """What a finished keep-awake did."""

    polls: int
    failures: int
    ended: KeepAwakeEnd | None
    """None when it ended with an error."""
    last_error: str | None = None


class KeepAwakeError(UserError):
    """Too many poll failures in a row (or one that cannot be retried). Carries the report."""

    def __init__(self, report: KeepAwakeReport, error: str) -> None:
        super().__init__(
            "Could not keep the box awake",
            f"Polling the box failed {report.failures} time(s); the last error: {error}.",
            "Check this computer's connection to the provider; "
            "the box may be suspended when its idle window runs out.",
        )
        self.report = report


@dataclass(frozen=True)
class Finished:
    report: KeepAwakeReport


@dataclass(frozen=True)
class GaveUp:
    error: KeepAwakeError


KeepAwakeAction = Act | CheckAt | Finished | GaveUp
"""`Act`: poll now (the poll may check the running gate first), then feed its outcome back; `CheckAt`: sleep until
then and ask again."""


@dataclass(frozen=True)
class KeepAwakeState:
    """The outside keep-awake between steps. Immutable: each step returns the next state and an action.

    The runner loop is:
        state = KeepAwakeState.begin(policy, now)
        loop: state, action = state.next_action(now, kept_until)
              Act -> started = now; outcome = await poll()
                     state, action = state.on_poll_result(outcome, started, kept_until)
              CheckAt -> sleep until action.at
              Finished -> return action.report;  GaveUp -> raise action.error
        cancelled or dropped -> state.stop() (the report says STOPPED)
    """

    policy: KeepAwakePolicy
    next_poll_monotonic: float
    """No poll before this: an interval after the last one's start, whatever it found."""
    stops_at: float
    """When the box sleeps unless polled: a window after the last poll that counted (at first: now)."""
    polls: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    last_error: str | None = None
    ended: KeepAwakeEnd | None = None
    error: KeepAwakeError | None = field(default=None, compare=False)

    @classmethod
    def begin(cls, policy: KeepAwakePolicy, now_monotonic: float) -> KeepAwakeState:
        """Start: the policy is validated and the first poll is due at once."""
        return cls(policy=policy.validate(), next_poll_monotonic=now_monotonic, stops_at=now_monotonic)

    @property
    def done(self) -> bool:
        return self.ended is not None or self.error is not None

    def report(self) -> KeepAwakeReport:
        return KeepAwakeReport(
            polls=self.polls, failures=self.failures, ended=self.ended, last_error=self.last_error
        )

    def _terminal(self) -> KeepAwakeAction:
        if self.error is not None:
            return GaveUp(self.error)
        return Finished(self.report())

    def _end(self, why: KeepAwakeEnd) -> tuple[KeepAwakeState, KeepAwakeAction]:
        state = replace(self, ended=why)
        return state, state._terminal()

    def next_action(self, now_monotonic: float,
                    kept_until: float = math.inf) -> tuple[KeepAwakeState, KeepAwakeAction]:
        """What to do at `now_monotonic` for a box the agent means to keep up until `kept_until` (its awake ceiling
        or a pending prompt's deadline, on the same clock): poll, wait, or end there (`DEADLINE`)."""
        if self.done:
            return self, self._terminal()
        if now_monotonic >= kept_until:
            return self._end(KeepAwakeEnd.DEADLINE)
        if now_monotonic < self.next_poll_monotonic:
            return self, CheckAt(min(self.next_poll_monotonic, kept_until))
        match plan(self.policy.pace, now=now_monotonic, stops_at=self.stops_at, kept_until=kept_until):
            case CheckAt(at=at):
                return self, CheckAt(min(at, kept_until))
            case Cannot():
                return self._end(KeepAwakeEnd.DEADLINE)
            case act:
                return self, act

    def on_poll_result(
        self, outcome: PollOutcome, started_monotonic: float, kept_until: float = math.inf
    ) -> tuple[KeepAwakeState, KeepAwakeAction]:
        """Take one poll's outcome (the poll started at `started_monotonic`) and say what comes next.

        The cadence runs from each poll's start, so a slow poll does not stretch the gap.
        """
        if self.done:
            return self, self._terminal()
        if outcome.kind is PollOutcomeKind.NOT_RUNNING:
            # The gate answered; no request reached the box, so this is not a poll made.
            return self._end(KeepAwakeEnd.GATE_CLOSED)
        polls = self.polls + 1
        next_at = started_monotonic + self.policy.interval_seconds
        if outcome.kind is PollOutcomeKind.FAILED:
            message = outcome.error or "unknown error"
            state = replace(
                self,
                polls=polls,
                failures=self.failures + 1,
                consecutive_failures=self.consecutive_failures + 1,
                last_error=message,
                next_poll_monotonic=next_at,
            )
            if not outcome.retryable or state.consecutive_failures > self.policy.tolerated_errors:
                failed = replace(state, error=KeepAwakeError(state.report(), message))
                return failed, failed._terminal()
            return state.next_action(started_monotonic, kept_until)
        state = replace(self, polls=polls, consecutive_failures=0, next_poll_monotonic=next_at,
                        stops_at=started_monotonic + self.policy.idle_window_seconds)
        if outcome.kind is PollOutcomeKind.NOT_BUSY:
            return state._end(KeepAwakeEnd.NO_LONGER_BUSY)
        return state.next_action(started_monotonic, kept_until)

    def stop(self, why: KeepAwakeEnd = KeepAwakeEnd.STOPPED) -> KeepAwakeState:
        """Stopped by the caller (cancelled, dropped, user suspended it), or `NO_LONGER_BUSY` when the caller
        heard the host turn idle before the next poll would have said so."""
        if self.done:
            return self
        return replace(self, ended=why)
