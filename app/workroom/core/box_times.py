"""The times a host's faces show, one meaning each (docs/ui.md, "Times, one meaning per word").

- **Busy for**: how long the agent has seen work without a break (`Status.busy_seconds`), not counting the
  time the box slept during it. Keep awake and Wake and connect do not restart it; an IDLE does.
- **Ceiling used**: the time counted toward the awake ceiling (`Status.awake_seconds`): it starts when work
  starts and restarts with Keep awake or Wake and connect, so after a Keep awake it is shorter than Busy for.
- **Asleep in about N**: when an idle box that sleeps will sleep: what is left of the hold after work, plus the
  provider's idle window, less what its idle clock has already counted (where the provider lets the app read
  it); where nothing can be read, "sleeps within its window".

Pure: the session and the faces hand in the status, the traits, the agent's clock now and the last reading.
"""

from __future__ import annotations

from dataclasses import dataclass

from workroom.core.durations import format_duration
from workroom.core.heartbeat_proof import IdleClockReading
from workroom.core.protocol import Status, Verdict
from workroom.core.traits import ProviderTraits

HOLD_CLASS = "hold"


def busy_seconds(status: Status, agent_now: float) -> float | None:
    """How long the agent has seen work without a break as of `agent_now`, less the time the box slept during
    it; None while it sees none. An agent that does not say (older than `busy_seconds`) gives the ceiling's
    clock instead, which Keep awake restarts."""
    if status.classifier_verdict is not Verdict.BUSY:
        return None
    if status.busy_seconds is None:
        return ceiling_used_seconds(status, agent_now)
    return status.busy_seconds + max(0.0, agent_now - status.monotonic)


def ceiling_used_seconds(status: Status, agent_now: float) -> float:
    """The time counted toward the awake ceiling as of `agent_now` (it runs only while the agent sees work)."""
    if status.classifier_verdict is not Verdict.BUSY:
        return 0.0
    return status.awake_seconds + max(0.0, agent_now - status.monotonic)


def ceiling_restarted(status: Status, agent_now: float) -> bool:
    """The ceiling's clock was restarted during this stretch of work (Keep awake, Wake and connect)."""
    busy = busy_seconds(status, agent_now)
    return busy is not None and status.busy_seconds is not None and ceiling_used_seconds(status, agent_now) + 1.0 < busy


def only_held(status: Status) -> bool:
    """Busy only because the work just ended: the agent holds BUSY a little after work (its hysteresis)."""
    reasons = status.structured_reasons
    return status.verdict is Verdict.BUSY and bool(reasons) and all(r.reason_class == HOLD_CLASS for r in reasons)


@dataclass(frozen=True)
class SleepEstimate:
    """When an idle box that sleeps will sleep. `seconds` None: only that it sleeps within its window."""

    seconds: float | None
    window_seconds: float | None

    def words(self) -> str:
        if self.seconds is not None:
            return f"asleep in about {format_duration(max(0.0, self.seconds))}"
        if self.window_seconds is not None:
            return f"sleeps within its window ({format_duration(self.window_seconds)})"
        return "sleeps within its window"


def sleep_estimate(status: Status, traits: ProviderTraits, agent_now: float, *,
                   reading: IdleClockReading | None = None, now_monotonic: float | None = None) -> SleepEstimate | None:
    """When this live box will sleep, if it is idle (or only held after work) on a provider that sleeps it;
    None otherwise (busy, kept awake, a host that never sleeps).

    Held after work: what is left of the hold, plus the window (its keep-awake stops when the hold ends).
    Idle: the window less what the provider's idle clock had counted when read, less the time since; `reading`
    must be one taken since the box turned idle (before it, the keep-awake was still resetting the clock)."""
    if not traits.metering.sleeps:
        return None
    window = traits.idle_window_seconds
    if reading is not None and reading.window_seconds is not None:
        window = reading.window_seconds
    if only_held(status):
        hold_until = status.hold_until
        if hold_until is None or window is None:
            return SleepEstimate(None, window)
        return SleepEstimate(max(0.0, hold_until - agent_now) + window, window)
    if status.verdict is not Verdict.IDLE:
        return None
    if reading is None or window is None or now_monotonic is None:
        return SleepEstimate(None, window)
    left = window - reading.idle_seconds - max(0.0, now_monotonic - reading.read_at)
    return SleepEstimate(max(0.0, left), window)


def past_ceiling_words(status: Status, agent_now: float) -> str:
    """How long a box past its awake ceiling has been busy, with each number named for what it counts:
    "busy for 2 min 1 s, longer than its 1 min awake ceiling"; after a Keep awake (or a wake) restarted the
    ceiling: "busy for 5 min, 1 min 1 s of it since its 1 min awake ceiling last restarted"."""
    ceiling = format_duration(status.ceiling_seconds)
    used = ceiling_used_seconds(status, agent_now)
    # The ceiling counts only while busy, so busy time is never the shorter (an agent that restarted began a new
    # busy span while the ceiling it kept went on): one number for one stretch, never "busy for 4 s, longer than
    # its 45 s awake ceiling" beside "30 min 6 s of 45 s used".
    busy = max(busy_seconds(status, agent_now) or 0.0, used)
    if ceiling_restarted(status, agent_now):
        return (f"busy for {format_duration(busy)}, {format_duration(used)} of it since its {ceiling} awake "
                "ceiling last restarted")
    return f"busy for {format_duration(busy)}, longer than its {ceiling} awake ceiling"
