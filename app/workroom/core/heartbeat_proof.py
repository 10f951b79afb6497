"""Proof, not hope: did the provider's idle clock see the keep-awake?

"Kept awake by the heartbeat" used to mean only that the agent sent its datagram without a local error. A
firewall that drops it, a gateway that is not the metered interface or a provider that meters differently
leaves such a box falling asleep mid-job. Where a provider lets us read its idle clock (without waking the
box and without the read counting as activity), the session reads it while the agent is busy and
asserting, and this module judges the reading; see docs/providers.md, "Is the heartbeat seen?".

The rule: every heartbeat resets the provider's idle clock, so while heartbeats are being sent the clock
never passes one heartbeat interval plus a margin (the provider's own sampling, the reading's delay).
Past that, the provider is not seeing the heartbeat. A reset is proof only when nothing of ours explains
it: the app's own traffic on the box's wire (its liveness pings) also resets a network-metered clock, so a
reset within the slack after our own traffic proves nothing.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from workroom.core.durations import format_duration

MARGIN_SECONDS = 3.0
"""Fixed part of the margin: the provider samples its meter about once a second, and reading takes time."""
MARGIN_FRACTION = 0.1
"""The margin grows with the interval: the agent's clock and the provider's drift a little per interval."""
OWN_TRAFFIC_SLACK_SECONDS = 1.5
"""A reset this soon after our own traffic may be ours (the provider notices bytes up to a second late)."""


def _secs(seconds: float) -> str:
    """Seconds as seconds while they are countable at a glance ("41 s of a 60 s window")."""
    return f"{seconds:.0f} s" if seconds < 600 else format_duration(seconds)


def margin_for(interval_seconds: float) -> float:
    return MARGIN_SECONDS + MARGIN_FRACTION * interval_seconds


class IdleClockReading(BaseModel):
    """What a provider says about its idle clock for one box, read at `read_at` (this computer's clock)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    idle_seconds: float = Field(ge=0, allow_inf_nan=False)
    """Seconds since the provider last counted activity on the box."""
    window_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """The provider's idle window, when it says."""
    read_at: float


class ProofState(StrEnum):
    CONFIRMED = "confirmed"
    NOT_SEEN = "not_seen"
    UNCONFIRMED = "unconfirmed"


class HeartbeatProof(BaseModel):
    """The verdict on the keep-awake, as the faces show it. `confirmed` is None when it cannot be known."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: ProofState
    why: str
    """One plain sentence: what the app knows and how."""
    idle_seconds: float | None = None
    window_seconds: float | None = None
    last_seen_at: float | None = None
    """When the provider last saw activity on the box (this computer's monotonic clock)."""
    read_at: float | None = None

    @property
    def confirmed(self) -> bool | None:
        return {ProofState.CONFIRMED: True, ProofState.NOT_SEEN: False}.get(self.state)

    def last_seen_age(self, now: float) -> float | None:
        return None if self.last_seen_at is None else max(0.0, now - self.last_seen_at)

    def idle_now(self, now: float) -> float | None:
        """The provider's idle clock as of `now`, assuming nothing reset it since the reading."""
        return self.last_seen_age(now)


CANNOT_READ = HeartbeatProof(
    state=ProofState.UNCONFIRMED,
    why="Unconfirmed: this provider does not let the app read its idle clock, so nothing proves it sees "
        "the keep-awake.",
)


def window_too_short(window_seconds: float, interval_seconds: float) -> HeartbeatProof | None:
    """An idle window that runs out before a missed heartbeat could be noticed: say so, once."""
    needed = interval_seconds + margin_for(interval_seconds)
    if window_seconds > needed:
        return None
    return HeartbeatProof(
        state=ProofState.UNCONFIRMED, window_seconds=window_seconds,
        why=(f"Unconfirmed: the idle window ({_secs(window_seconds)}) is not longer than one heartbeat "
             f"interval plus the margin ({_secs(needed)}), so the box could sleep before the app "
             "notices a missed heartbeat."),
    )


def judge(reading: IdleClockReading, *, interval_seconds: float, own_traffic_at: float | None,
          previous: HeartbeatProof | None) -> HeartbeatProof:
    """The proof after one reading, taken while the agent is busy and asserting.

    `own_traffic_at` is when the app last put traffic on the box's wire (None: never, or the provider does
    not count it). A reading that neither passes the limit nor proves anything keeps the previous verdict.
    """
    window = reading.window_seconds
    if window is not None:
        short = window_too_short(window, interval_seconds)
        if short is not None:
            return short
    limit = interval_seconds + margin_for(interval_seconds)
    last_seen = reading.read_at - reading.idle_seconds
    common = {"idle_seconds": reading.idle_seconds, "window_seconds": window, "last_seen_at": last_seen,
              "read_at": reading.read_at}
    if reading.idle_seconds > limit:
        of_window = f" of a {_secs(window)} window" if window is not None else ""
        return HeartbeatProof(
            state=ProofState.NOT_SEEN, **common,
            why=(f"The provider is not seeing the heartbeat (idle {_secs(reading.idle_seconds)}"
                 f"{of_window})."),
        )
    ours = own_traffic_at is not None and last_seen <= own_traffic_at + OWN_TRAFFIC_SLACK_SECONDS
    if ours and previous is not None and previous.state is not ProofState.UNCONFIRMED:
        return previous.model_copy(update=common)
    if ours:
        return HeartbeatProof(state=ProofState.UNCONFIRMED, **common,
                              why="Not known yet: the activity the provider last saw may have been this app's own "
                                  "traffic, so it does not prove the keep-awake; the next reading will tell.")
    return HeartbeatProof(state=ProofState.CONFIRMED, **common,
                          why="Confirmed: the provider's idle clock shows the keep-awake.")


def next_read_in(proof: HeartbeatProof, *, interval_seconds: float, now: float,
                 minimum: float = 1.0) -> float:
    """When to read again: just as the clock would pass the limit if nothing resets it — few reads, and a
    missed heartbeat is noticed within one interval plus the margin. While not seen or not proven yet,
    every quarter interval, so a heartbeat that lands is noticed soon."""
    if proof.state is not ProofState.CONFIRMED:
        return max(minimum, interval_seconds / 4)  # not (or no longer) proven: notice the next heartbeat soon
    limit = interval_seconds + margin_for(interval_seconds)
    idle = proof.idle_now(now)
    if idle is None:
        return minimum
    return max(minimum, limit - idle + 0.05)


def notification(workroom: str, proof: HeartbeatProof | None, previous: HeartbeatProof | None,
                 now: float) -> tuple[str, str] | None:
    """(title, message) when the keep-awake has just stopped being seen; None otherwise."""
    if proof is None or proof.state is not ProofState.NOT_SEEN:
        return None
    if previous is not None and previous.state is ProofState.NOT_SEEN:
        return None
    message = proof.why
    if proof.window_seconds is not None and proof.idle_seconds is not None:
        left = proof.window_seconds - (proof.idle_now(now) or proof.idle_seconds)
        message += f" It may be put to sleep in {_secs(max(0.0, left))}."
    return f"{workroom}: busy but not kept awake", message
