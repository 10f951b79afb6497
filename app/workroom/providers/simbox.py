"""The simulated sleepable box (the `simbox` development tool): SSH through the simulator's loopback proxy.

The box sleeps after network silence for its idle window (docs/simbox.md), so the agent's heartbeat
keeps it awake while BUSY. The box's state is read from the simulator's health endpoint, which never
wakes a box: the app does not wake a sleeping box just to look. The heartbeat runs at a third of the
box's window (at most the agent's default), so one lost datagram never lets a busy box sleep. The same page
gives the box's idle clock, so the app can check that the heartbeat is seen (docs/providers.md).
"""

from __future__ import annotations

import time
from typing import Any

from workroom.core.heartbeat_proof import IdleClockReading
from workroom.core.hosts import Host
from workroom.core.traits import DEFAULT_HEARTBEAT_INTERVAL_SECONDS, ProviderTraits
from workroom.providers.base import BoxState
from workroom.providers.bounded_http import PollFailed, get_json
from workroom.providers.idle_clock import reading_from
from workroom.providers.ssh_family import SshProvider

HEALTH_TIMEOUT_SECONDS = 3.0


class SimboxProvider(SshProvider):
    kind = "simbox"

    def traits(self, host: Host) -> ProviderTraits:
        traits = super().traits(host)
        window = traits.idle_window_seconds
        if window is None:
            return traits
        return traits.with_heartbeat_interval(min(DEFAULT_HEARTBEAT_INTERVAL_SECONDS, window / 3))

    async def box_state(self, host: Host) -> BoxState:
        data = await self._health(host)
        state = data.get("state") if data is not None else None
        return {"asleep": BoxState.ASLEEP, "awake": BoxState.AWAKE}.get(str(state), BoxState.UNKNOWN)

    async def read_idle_clock(self, host: Host) -> IdleClockReading | None:
        """The box's idle seconds from the simulator's health page (on loopback: never the box's wire)."""
        data = await self._health(host)
        return None if data is None else reading_from(data, time.monotonic())

    async def _health(self, host: Host) -> dict[str, Any] | None:
        """The box's document on the simulator's health page; None when it cannot be read."""
        if not host.provider_ref:
            return None
        try:
            data = await get_json(host.provider_ref, HEALTH_TIMEOUT_SECONDS)
        except PollFailed:
            return None
        return data if isinstance(data, dict) else None
