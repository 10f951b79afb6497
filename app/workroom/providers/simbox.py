"""The simulated sleepable box (workroom.simbox): SSH through the simulator's loopback proxy.

The box sleeps by the seed's vmd rule (network silence for its idle window), so the agent's heartbeat
keeps it awake while BUSY. The box's state is read from the simulator's health endpoint, which never
wakes a box: the app does not wake a sleeping box just to look. The heartbeat runs at a third of the
box's window (at most the agent's default), so one lost datagram never lets a busy box sleep.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

from workroom.core.hosts import Host
from workroom.core.traits import DEFAULT_HEARTBEAT_INTERVAL_SECONDS, ProviderTraits
from workroom.providers.base import BoxState
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
        if not host.provider_ref:
            return BoxState.UNKNOWN
        url = host.provider_ref

        def fetch() -> BoxState:
            with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT_SECONDS) as reply:
                data = json.loads(reply.read())
            state = data.get("state") if isinstance(data, dict) else None
            if not isinstance(state, str):
                return BoxState.UNKNOWN
            return {"asleep": BoxState.ASLEEP, "awake": BoxState.AWAKE}.get(state, BoxState.UNKNOWN)

        try:
            return await asyncio.get_running_loop().run_in_executor(None, fetch)
        except (OSError, ValueError):
            return BoxState.UNKNOWN
