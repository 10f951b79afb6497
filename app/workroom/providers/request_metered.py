"""Platforms that meter idleness by inbound requests through their endpoint proxy (docs/providers.md).

Work inside the box does not count, nor do its own loopback requests; only a caller outside keeps it up.
While the app runs and the host is BUSY, the session's KeepAwake polls `GET /v1/health` (the agent's
health endpoint, unauthenticated, telling only busy/verdict/stalled) through the provider's proxy. The
host's reference gives that proxy's base URL (`proxy_url`) and, where the platform reports its idle timer,
that status page (`idle_clock_url`). The simulator's `--metering requests` is such a platform.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workroom.core.heartbeat_proof import IdleClockReading
from workroom.core.hosts import Host
from workroom.core.keepawake import PollOutcome
from workroom.core.provider_specs import IDLE_CLOCK_URL, PROXY_BASE_URL
from workroom.providers.bounded_http import PollFailed, get_json
from workroom.providers.idle_clock import read_idle_clock_url
from workroom.providers.ssh_family import SshProvider

if TYPE_CHECKING:  # loaded with the first connection, never by a look (cli/look.py)
    from workroom.remote.agent_install import ServeOptions

HEALTH_PORT = 8080
POLL_TIMEOUT_SECONDS = 5.0
"""The whole poll (connect, request, answer), not each read."""


class RequestMeteredProvider(SshProvider):
    def serve_options(self, host: Host) -> ServeOptions:
        from workroom.remote.agent_install import ServeOptions

        base = super().serve_options(host)
        return ServeOptions(workroom=base.workroom, candidates=base.candidates, heartbeat=False,
                            extra=("--health-listen", f"0.0.0.0:{HEALTH_PORT}"))

    def health_url(self, host: Host) -> str | None:
        base = PROXY_BASE_URL.of(host.reference)
        return base.rstrip("/") + "/v1/health" if base else None

    async def read_idle_clock(self, host: Host) -> IdleClockReading | None:
        """The platform's idle timer, where it reports one (the `idle_clock_url` reference): a successful
        poll that does not move it is not a confirmation (docs/providers.md). The URL must be the
        platform's API or status page, never the box's metered endpoint (that read would count)."""
        url = IDLE_CLOCK_URL.of(host.reference)
        if url is None:
            return None
        return await read_idle_clock_url(url, POLL_TIMEOUT_SECONDS)

    async def poll_health(self, host: Host) -> PollOutcome:
        """One request through the provider's proxy: it counts as activity and says whether still busy."""
        url = self.health_url(host)
        if url is None:
            return PollOutcome.failed(f"this host has no {PROXY_BASE_URL.label} ({PROXY_BASE_URL.name})",
                                      retryable=False)
        try:
            data = await get_json(url, POLL_TIMEOUT_SECONDS)
        except PollFailed as error:
            return PollOutcome.failed(f"health request failed: {error}")
        if not isinstance(data, dict) or not isinstance(data.get("busy"), bool):
            return PollOutcome.failed("health answer is not {busy: bool, ...}", retryable=False)
        if data.get("stalled") is True:
            return PollOutcome.not_busy()  # a wedged agent's last word is not evidence of work
        return PollOutcome.busy() if data["busy"] else PollOutcome.not_busy()

