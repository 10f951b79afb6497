"""A link's sends run on a thread of the link's own: a peer that stopped reading (a full channel window: the send
blocks until the channel closes) holds that link alone. Sends queued in the loop's shared executor once filled
it, and other hosts' blocking work (an uninstall) waited there for over 90 s. Real socket pairs whose far ends
never read, filled until a send blocks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time

import pytest
from workroom.core.protocol import Method
from workroom.remote.agent_link import open_stream_link

pytestmark = pytest.mark.unit

HELLO = json.dumps({"hello": "wr-agent", "protocol": 1, "version": "0.1.0", "build": "ab" * 32}).encode() + b"\n"
STUCK_LINKS = 40
"""More than the shared executor's most workers on any machine (min(32, CPUs + 4))."""


def test_sends_stuck_on_peers_that_stopped_reading_hold_nothing_else() -> None:
    async def go() -> tuple[float, float]:
        pairs = [socket.socketpair() for _ in range(STUCK_LINKS + 1)]
        links = [open_stream_link(ours, None, name=f"stuck{i}") for i, (ours, _) in enumerate(pairs)]
        stuck: list[asyncio.Future[object]] = []
        try:
            for link, (_, theirs) in zip(links, pairs):
                theirs.sendall(HELLO)
                await link.client.hello(timeout=5)
                link.client.trust()
            for ours, _ in pairs[:STUCK_LINKS]:
                ours.setblocking(False)
                try:  # fill the socket's buffers until the peer (which never reads) takes nothing more
                    while True:
                        ours.send(b"x" * 65536)
                except BlockingIOError:
                    pass
                ours.setblocking(True)
            stuck = [asyncio.ensure_future(link.client.call(Method.PING, timeout=30)) for link in links[:STUCK_LINKS]]
            await asyncio.sleep(0.5)  # every stuck send has been taken by whatever thread runs it
            loop = asyncio.get_running_loop()
            started = time.monotonic()
            await asyncio.wait_for(loop.run_in_executor(None, time.monotonic), 5)  # the shared executor is free
            shared = time.monotonic() - started
            free_link, (_, free_far) = links[STUCK_LINKS], pairs[STUCK_LINKS]
            free_far.settimeout(5)
            sent = asyncio.ensure_future(free_link.client.call(Method.PING, timeout=5))
            line = await asyncio.wait_for(loop.run_in_executor(None, free_far.recv, 4096), 5)
            free_far.sendall(json.dumps({"id": json.loads(line)["id"], "result": {"monotonic": 1.0}}).encode() + b"\n")
            await asyncio.wait_for(sent, 5)
            return shared, time.monotonic() - started
        finally:
            for ours, theirs in pairs:  # a shutdown wakes a send blocked on the socket (a close would not)
                for end in (ours, theirs):
                    with contextlib.suppress(OSError):
                        end.shutdown(socket.SHUT_RDWR)
            for link in links:
                link.close("the test ended")
            await asyncio.gather(*stuck, return_exceptions=True)
            for ours, theirs in pairs:
                ours.close()
                theirs.close()

    shared, answered = asyncio.run(go())
    assert shared < 2.0 and answered < 2.0, (shared, answered)


def test_a_stream_that_ends_from_the_far_side_takes_its_sending_thread_with_it() -> None:
    """A link the host ended (not closed by the app) leaves no sending thread behind: over days of reconnects
    each lost link's idle thread would otherwise stay."""
    import threading

    async def go() -> list[str]:
        ours, theirs = socket.socketpair()
        link = open_stream_link(ours, None, name="farend")
        theirs.sendall(HELLO)
        await link.client.hello(timeout=5)
        link.client.trust()
        asking = asyncio.ensure_future(link.client.call(Method.PING, timeout=5))
        theirs.settimeout(5)
        await asyncio.get_running_loop().run_in_executor(None, theirs.recv, 4096)  # the send went out
        theirs.close()
        await asyncio.wait_for(link.closed, 5)
        await asyncio.gather(asking, return_exceptions=True)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(t.name == "wr-send-farend" for t in threading.enumerate()):
            await asyncio.sleep(0.05)
        ours.close()
        return [t.name for t in threading.enumerate() if t.name == "wr-send-farend"]

    assert asyncio.run(go()) == []
