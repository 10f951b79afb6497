"""The vmd idle rule as pure logic: byte counters and proxy events reset a clock; a silent window sleeps.

With ``count_bytes=False`` it is the request meter instead (docs/simbox.md, request metering): bytes are
still recorded (for the page) but only proxied requests reset the clock.

No I/O and no real time: the daemon passes ``now`` (a monotonic reading) in, so the rule is tested on a
fake clock. The rule (docs/simbox.md): once a second read rx_bytes and tx_bytes; if the number moved the
box is busy; if nothing moved for the whole window, stop it — and a proxied request counts when it starts
and when it ends, never while it is open.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class IdleClock:
    """One box's idle clock and its awake/asleep flag.

    While asleep nothing resets the clock (a sleeping box does not wake because a counter moved, e.g.
    from the RST of a torn-down connection); the counter baseline still follows, so waking does not
    count stale bytes as fresh activity.
    """

    window: float
    now: float
    count_bytes: bool = True  # False: request-metered: only proxied requests count
    last_activity: float = field(init=False)
    last_activity_reason: str = field(init=False, default="start")
    last_byte_at: float | None = field(init=False, default=None)
    asleep: bool = field(init=False, default=False)
    _rx: int | None = field(init=False, default=None)
    _tx: int | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if not self.window > 0:
            raise ValueError(f"idle window must be > 0 seconds, got {self.window!r}")
        self.last_activity = self.now

    def sample(self, rx: int, tx: int, now: float) -> bool:
        """Feed one counter reading; True when the counters moved since the previous one."""
        moved = self._rx is not None and (rx != self._rx or tx != self._tx)
        self._rx, self._tx = rx, tx
        if moved:
            self.last_byte_at = now
            if not self.asleep and self.count_bytes:
                self._reset(now, "bytes")
        return moved

    def touch(self, now: float, reason: str) -> None:
        """A proxied connection started or ended (or an admin poke): activity, unless asleep."""
        if not self.asleep:
            self._reset(now, reason)

    def idle_for(self, now: float) -> float:
        return max(0.0, now - self.last_activity)

    def due(self, now: float) -> bool:
        """A full window of silence has passed on an awake box: time to sleep."""
        return not self.asleep and self.idle_for(now) >= self.window

    def mark_asleep(self) -> None:
        self.asleep = True

    def mark_awake(self, now: float, reason: str) -> None:
        """Waking is activity: the new window starts now."""
        self.asleep = False
        self._reset(now, reason)

    def _reset(self, now: float, reason: str) -> None:
        self.last_activity = max(self.last_activity, now)
        self.last_activity_reason = reason
