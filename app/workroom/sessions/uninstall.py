"""Stopping a host's agent and removing it from the box, on a thread of its own."""

from __future__ import annotations

import logging
import time

from workroom.core.hosts import Host
from workroom.providers.base import BoxState, Provider, ProviderContext
from workroom.remote.agent_install import UninstallReport
from workroom.sessions.blocking_runner import BlockingRunner

log = logging.getLogger(__name__)


async def uninstall_agent(provider: Provider, host: Host, context: ProviderContext, *,
                          stop_only: bool = False) -> UninstallReport:
    """Stop the host's agent the way it was started and remove its unit, plist, bundle and state (`stop_only`:
    keep them; the next connect starts it again). Asking for it is an explicit wake of a platform box."""
    if provider.connects_only_when_awake and await provider.box_state(host) is BoxState.ASLEEP:
        started = time.monotonic()
        await provider.wake(host)  # the platform's own start
        log.info("%s: started in %.1f s, to uninstall its agent", host.name, time.monotonic() - started)

    def work() -> UninstallReport:
        t0 = time.monotonic()
        shell = provider.open_shell(host)
        log.info("%s: connected in %.1f s; %s the agent", host.name, time.monotonic() - t0,
                 "stopping" if stop_only else "uninstalling")
        try:
            report = provider.installer(host, shell).uninstall(stop_only=stop_only)
            context.forget_agent(host.name)  # its key went with its files (or waits, stopped)
            log.info("%s: agent %s in %.1f s", host.name, "stopped" if stop_only else "uninstalled",
                     time.monotonic() - t0)
            return report
        finally:
            shell.close()

    # A thread of its own, as a host's blocking work has (sessions/blocking_runner.py), never the loop's shared
    # executor: sends stuck on other hosts' dead links once filled that and held this uninstall > 90 s.
    runner = BlockingRunner(f"{host.name}-uninstall")
    try:
        return await runner.run(work)
    finally:
        runner.shutdown()
