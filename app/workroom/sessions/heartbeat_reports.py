"""Is the agent ticking? Each heartbeat it sends reaches the app as a status (`keep_awake.sent` moves, docs/
protocol.md "Heartbeat reports"). The provider's idle clock can be reset by anything on the box's wire — a job's
own traffic, a person's ssh, our reconnects — so it cannot tell a frozen agent from a live one; a report can only
come from a live agent.

While the box is busy and its agent says it is sending its heartbeat, the next report is due within one interval
plus the proof's margin (core.heartbeat_proof.margin_for). Past that, `on_overdue(last_report_at)` fires, once per
silence: the session says the agent has stalled and checks the link with one ping.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from workroom.core.heartbeat_proof import margin_for
from workroom.core.metering import Keeper
from workroom.core.protocol import Status, Verdict
from workroom.core.traits import ProviderTraits


def reports_expected(status: Status, traits: ProviderTraits) -> float | None:
    """The heartbeat interval when a report is expected with every heartbeat, else None: only where the agent's
    heartbeat keeps the box awake, while its published verdict is BUSY and it says it is sending, from an agent
    that reports its heartbeats."""
    keep = status.keep_awake
    if traits.metering.keeper is not Keeper.AGENT_HEARTBEAT or keep is None or keep.sent is None:
        return None
    if status.verdict is not Verdict.BUSY or status.suppressed or not keep.enabled or not status.asserting:
        return None
    return keep.interval_seconds


class HeartbeatReports:
    """One host's watch on its agent's heartbeat reports. `stop()` (the link's teardown) ends it."""

    def __init__(self, traits: ProviderTraits, on_overdue: Callable[[float], None], *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._traits = traits
        self._on_overdue = on_overdue
        self._clock = clock
        self._count: int | None = None
        self.reported_at: float | None = None
        """When the last report arrived (this computer's clock)."""
        self.overdue = False
        self._timer: asyncio.TimerHandle | None = None

    def on_status(self, status: Status) -> bool:
        """Take a status; True when it reports a heartbeat just sent (so it is not the app's own traffic: it
        travels with the heartbeat, which resets the provider's clock at the same moment)."""
        keep = status.keep_awake
        count = keep.sent if keep is not None else None
        reported = count is not None and self._count is not None and count != self._count
        if count is not None:
            self._count = count
        interval = reports_expected(status, self._traits)
        now = self._clock()
        if reported or (interval is not None and self.reported_at is None):
            self.reported_at, self.overdue = now, False  # a report, or the start of expecting them
        if interval is None:
            self._cancel()
            self.reported_at, self.overdue = None, False
            return reported
        if not self.overdue:
            self._arm(self.reported_at + interval + margin_for(interval))  # type: ignore[operator]
        return reported

    def stop(self) -> None:
        self._cancel()
        self._count, self.reported_at, self.overdue = None, None, False

    def _arm(self, due: float) -> None:
        self._cancel()
        self._timer = asyncio.get_running_loop().call_later(max(0.0, due - self._clock()), self._fire)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        if self.reported_at is None or self.overdue:
            return
        self.overdue = True
        self._on_overdue(self.reported_at)
