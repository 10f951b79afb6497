"""The probe-then-relay stream: the probe's answer leads the stream and never reaches the protocol client;
what comes before it is bounded (64 KiB), with a clear error past it. Over a real socket pair."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from workroom.remote.agent_install import PROBE_ANSWER_LIMIT
from workroom.remote.agent_link import PreambleError, open_stream_link

pytestmark = pytest.mark.unit

HELLO = json.dumps({"hello": "wr-agent", "protocol": 1, "version": "0.1.0", "build": "ab" * 32}).encode() + b"\n"
ANSWER = json.dumps({"python": "3.11.2", "home": "/home/u", "sha256": "ab" * 32}).encode() + b"\n"


async def _link_fed(data: bytes, *, close: bool):  # type: ignore[no-untyped-def]
    ours, theirs = socket.socketpair()
    link = open_stream_link(ours, None, name="test", preamble=PROBE_ANSWER_LIMIT)
    theirs.sendall(data)
    if close:
        theirs.close()
    return link, theirs


def test_the_answer_leads_then_the_protocol_follows() -> None:
    async def go() -> tuple[bytes, str]:
        link, theirs = await _link_fed(b"a login script's motd\n" + ANSWER + HELLO, close=False)
        assert link.preamble is not None
        answer = await asyncio.wait_for(link.preamble, 5)
        hello = await link.client.hello(timeout=5)
        link.close()
        theirs.close()
        return answer, hello.build

    answer, build = asyncio.run(go())
    assert answer == b"a login script's motd\n" + ANSWER
    assert build == "ab" * 32


def test_more_than_the_limit_before_the_answer_is_refused_in_words() -> None:
    big = b"x" * (PROBE_ANSWER_LIMIT // 2) + b"\n"

    async def flood() -> PreambleError:
        link, theirs = await _link_fed(big * 3 + ANSWER + HELLO, close=False)
        assert link.preamble is not None
        try:
            with pytest.raises(PreambleError) as refused:
                await asyncio.wait_for(link.preamble, 5)
            await asyncio.wait_for(link.closed, 5)
        finally:
            theirs.close()
        return refused.value

    error = asyncio.run(flood())
    assert error.too_long
    assert "more than 64 KiB before the probe's answer" in error.why


def test_a_stream_that_ends_before_its_answer_says_so() -> None:
    async def go() -> PreambleError:
        link, _ = await _link_fed(b"", close=True)
        assert link.preamble is not None
        with pytest.raises(PreambleError) as ended:
            await asyncio.wait_for(link.preamble, 5)
        return ended.value

    error = asyncio.run(go())
    assert not error.too_long and error.why
