"""The app's link reads whatever a client or the app sends (docs/app_link.md, "Bounds"): generated headers, bodies
and frame streams never raise anything but the link's own refusal, on either side, and a reply frame stream never
answers a question with what was not an answer."""

from __future__ import annotations

import asyncio
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workroom import app_link

pytestmark = pytest.mark.unit

TAGS = st.sampled_from([app_link.HELLO, app_link.OUT, app_link.ERR, app_link.ASK, app_link.SECRET, app_link.EXIT,
                        app_link.BUSY, app_link.REFUSED, app_link.ANSWER, app_link.NO_ANSWER, b"Z", b"\x00"])
FRAME = st.tuples(TAGS, st.integers(0, 1 << 32 - 1), st.binary(max_size=64)).map(
    lambda t: t[0] + min(t[1], (1 << 32) - 1).to_bytes(4, "big") + t[2])
STREAM = st.one_of(st.binary(max_size=512), st.lists(FRAME, max_size=8).map(b"".join))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(header=st.one_of(st.binary(max_size=200), st.builds(
    lambda v, ver, n: b"%s %s %s %s" % (app_link.HEADER, v, ver, n),
    st.sampled_from([b"1", b"2", b"0", b"x", b"-1"]), st.binary(max_size=20).filter(lambda b: b" " not in b),
    st.sampled_from([b"0", b"65536", b"65537", b"4294967296", b"99999999999999999999", b"-3", b"x"]))),
       body=st.binary(max_size=600))
def test_the_apps_reading_of_a_request_never_raises(header: bytes, body: bytes) -> None:
    why = app_link.refusal(header)
    assert why is None or (isinstance(why, str) and why)
    got = app_link.read_body(body)
    assert got is None or (got[0].startswith("/") and isinstance(got[1], bool))


@settings(max_examples=300, deadline=None)
@given(data=STREAM)
def test_the_commands_frame_reader_takes_any_stream(data: bytes) -> None:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        frames = app_link._Frames(right)  # type: ignore[arg-type]
        try:
            for _ in range(64):
                got = frames.next()
                if got is None:
                    break
                tag, payload = got
                assert len(tag) == 1 and len(payload) <= app_link.MAX_FRAME_BYTES
        except app_link.LinkError:
            pass  # a frame larger than it takes: refused in words


class _Term:
    def __init__(self) -> None:
        self.answers: list[str | None] = []

    def answered(self, reply: str | None) -> None:
        self.answers.append(reply)


@settings(max_examples=300, deadline=None)
@given(data=STREAM)
def test_the_apps_reply_reader_takes_any_stream(data: bytes) -> None:
    async def go() -> list[str | None]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        term = _Term()
        await asyncio.wait_for(app_link._listen(reader, term), 5)  # type: ignore[arg-type]
        return term.answers

    answers = asyncio.run(go())
    expected = data.count(app_link.ANSWER) + data.count(app_link.NO_ANSWER)
    assert len(answers) <= expected
