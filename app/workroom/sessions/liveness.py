"""Is the peer there? While a peer must be watched, a ping every PING_INTERVAL_SECONDS that expects a reply within
PING_TIMEOUT_SECONDS; no answer closes the link (a dead or frozen peer is noticed within LIVENESS_DEADLINE_SECONDS,
and the session reconnects). Whether a ping is due is the session's (silence while a sleepable box is idle: our
bytes would keep it up) and the proof's (its readings stand in for pings where our bytes move the idle clock)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from workroom.remote.agent_link import AgentLink

PING_INTERVAL_SECONDS = 3.0
"""Each ping costs ~400 B on the wire with SSH and TCP: ~130 B/s, well under the agent's 500 B/s net signal."""
PING_TIMEOUT_SECONDS = 5.0
LIVENESS_DEADLINE_SECONDS = PING_INTERVAL_SECONDS + PING_TIMEOUT_SECONDS
"""Worst case from a peer freezing to the session calling it lost (the issue asks for <= 10 s)."""


async def watch_liveness(link: AgentLink, due: Callable[[], bool], own_traffic: Callable[[], None]) -> None:
    """Ping while `due()` says a peer must be watched, until the link closes or a ping goes unanswered."""
    while not link.closed.done():
        await asyncio.sleep(PING_INTERVAL_SECONDS)
        if due() and not await ping_or_close(link, own_traffic):
            return


async def ping_or_close(link: AgentLink, own_traffic: Callable[[], None]) -> bool:
    """One ping (our own traffic on the box's wire: `own_traffic()` notes it); no answer closes the link. True when
    it answered."""
    try:
        own_traffic()
        await link.client.ping(timeout=PING_TIMEOUT_SECONDS)
    except TimeoutError:
        link.close(f"no answer from the host for {PING_TIMEOUT_SECONDS:.0f} s (frozen or gone)")
        return False
    except Exception as error:  # an unwatched connection is worse than a reconnect
        link.close(f"the liveness check failed: {error}")
        return False
    return not link.closed.done()
