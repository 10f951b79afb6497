"""The simulated sleepable box (the `simbox` development tool): SSH through the simulator's loopback proxy.

The box sleeps after network silence for its idle window (docs/simbox.md), so the agent's heartbeat
keeps it awake while BUSY. The box's state is read from the simulator's health endpoint (the host's
`health_url` reference), which never wakes a box: the app does not wake a sleeping box just to look. The
heartbeat runs at a third of the box's window (at most the agent's default; the spec's
`heartbeat_follows_window`), so one lost datagram never lets a busy box sleep. The same page gives the
box's idle clock, so the app can check that the heartbeat is seen (docs/providers.md).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from workroom.core.heartbeat_proof import IdleClockReading
from workroom.core.host_text import plain
from workroom.core.hosts import Host
from workroom.core.provider_specs import HEALTH_PAGE_URL
from workroom.providers.base import BoxState, ProviderUnreadable
from workroom.providers.bounded_http import PollFailed, get_json
from workroom.providers.idle_clock import reading_from
from workroom.providers.ssh_family import SshProvider

HEALTH_TIMEOUT_SECONDS = 3.0


class SimboxProvider(SshProvider):
    async def box_state(self, host: Host) -> BoxState:
        data = await self._health(host)
        state = data.get("state")
        known = {"asleep": BoxState.ASLEEP, "awake": BoxState.AWAKE}.get(str(state))
        if known is None:
            raise ProviderUnreadable("The simulator's health page", f"it gave the box a state it does not know "
                                     f"({plain(str(state), 40)!r})")
        return known

    async def read_idle_clock(self, host: Host) -> IdleClockReading | None:
        """The box's idle seconds from the simulator's health page (on loopback: never the box's wire)."""
        try:
            data = await self._health(host)
        except ProviderUnreadable:
            return None
        return reading_from(data, time.monotonic())

    async def _health(self, host: Host) -> dict[str, Any]:
        """The box's document on the simulator's health page; `ProviderUnreadable` when it cannot be read.

        The URL may be the box's own page (`/v1/boxes/NAME`) or the simulator's root (`simbox up --json` prints
        it first, and the dialog's example is one): then the box is the one in the simulator's list whose SSH
        port is this host's (the simulator proxies each box's SSH on a port of its own)."""
        url = HEALTH_PAGE_URL.of(host.reference)
        if url is None:
            raise ProviderUnreadable("The simulator", "this host has no health page URL")
        page = f"The simulator's health page ({plain(url, 80)})"
        parts = urlsplit(url)
        if parts.path in ("", "/"):
            url = urlunsplit((parts.scheme, parts.netloc, "/v1/boxes", "", ""))
        try:
            data = await get_json(url, HEALTH_TIMEOUT_SECONDS)
        except PollFailed as failed:
            raise ProviderUnreadable(page, str(failed)) from None
        if isinstance(data, dict) and isinstance(data.get("boxes"), list):
            data = box_on_port(data["boxes"], host.port)
            if data is None:
                raise ProviderUnreadable(page, f"it lists no box whose SSH port is {host.port}")
        if not isinstance(data, dict):
            raise ProviderUnreadable(page, "its answer is not a box's")
        return data


def box_on_port(boxes: list[Any], port: int | None) -> dict[str, Any] | None:
    """The box in the simulator's list whose SSH is proxied on `port` (its document's `ssh.port`)."""
    for box in boxes:
        if not isinstance(box, dict):
            continue
        ssh = box.get("ssh")
        if isinstance(ssh, dict) and ssh.get("port") == port and not isinstance(port, bool):
            found: dict[str, Any] = box
            return found
    return None
