"""The simulated sleepable box (the `simbox` development tool): SSH through the simulator's loopback proxy.

The box sleeps after network silence for its idle window (docs/simbox.md), so the agent's heartbeat
keeps it awake while BUSY. The box's state is read from the simulator's health endpoint (the host's
`health_url` reference), which never wakes a box: the app does not wake a sleeping box just to look. The
heartbeat runs at a third of the box's window (at most the agent's default; the spec's
`heartbeat_follows_window`), so one lost datagram never lets a busy box sleep. The same page gives the
box's idle clock, so the app can check that the heartbeat is seen (docs/providers.md).
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from typing import Any

from workroom.core.heartbeat_proof import IdleClockReading
from workroom.core.hosts import Host
from workroom.core.provider_specs import HEALTH_PAGE_URL
from workroom.providers.base import BoxState
from workroom.providers.ssh_family import SshProvider

HEALTH_TIMEOUT_SECONDS = 3.0


class SimboxProvider(SshProvider):
    async def box_state(self, host: Host) -> BoxState:
        data = await self._health(host)
        state = data.get("state") if data is not None else None
        return {"asleep": BoxState.ASLEEP, "awake": BoxState.AWAKE}.get(str(state), BoxState.UNKNOWN)

    async def read_idle_clock(self, host: Host) -> IdleClockReading | None:
        """The box's idle seconds from the simulator's health page (on loopback: never the box's wire)."""
        data = await self._health(host)
        if data is None or data.get("state") != "awake":
            return None
        try:
            return IdleClockReading(idle_seconds=data["idle_for_s"], window_seconds=data.get("idle_window_s"),
                                    read_at=time.monotonic())
        except (KeyError, ValueError):
            return None

    async def _health(self, host: Host) -> dict[str, Any] | None:
        """The box's document on the simulator's health page; None when it cannot be read."""
        url = HEALTH_PAGE_URL.of(host.reference)
        if url is None:
            return None

        def fetch() -> Any:
            with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT_SECONDS) as reply:
                return json.loads(reply.read())

        try:
            data = await asyncio.get_running_loop().run_in_executor(None, fetch)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None
