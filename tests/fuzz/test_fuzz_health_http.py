"""Hostile HTTP heads to a real agent's health endpoint: each gets one well-formed answer with a documented
status, and the endpoint still answers the next poller."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from agentrun import send_and_read_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.integration

STATUSES = {b"200", b"400", b"404", b"405", b"431", b"505"}
token = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=0, max_size=12).map(str.encode)
request_lines = st.one_of(
    st.builds(lambda m, t, v: b" ".join([m, t, v]),
              st.sampled_from([b"GET", b"HEAD", b"POST", b"get", b"G\x00T", b""]) | token,
              st.sampled_from([b"/v1/health", b"/v1/health?x=1", b"http://h/v1/health", b"/", b"*"]) | token,
              st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1x", b""]) | token),
    st.binary(max_size=120),
)
headers = st.lists(st.binary(max_size=60) | st.builds(lambda n, v: n + b": " + v, token, st.binary(max_size=30)),
                   max_size=4)


def get(address: str, data: bytes) -> bytes:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        return send_and_read_all(s, data)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=request_lines, fields=headers, crlf=st.booleans())
def test_hostile_heads_get_one_documented_answer(fuzz_agent: Any, line: bytes, fields: list[bytes],
                                                 crlf: bool) -> None:
    address = fuzz_agent.status()["health_listen"]
    eol = b"\r\n" if crlf else b"\n"
    head = eol.join([line, *(f.replace(b"\r", b"").replace(b"\n", b"") for f in fields)]) + eol + eol
    answer = get(address, head)
    if not head.strip(b"\r\n"):
        assert answer == b""  # only empty lines, then a hang-up: nothing was asked, nothing is answered
    else:
        assert answer.startswith(b"HTTP/1.1 "), answer[:80]
        assert answer[9:12] in STATUSES, answer[:80]
        assert b"\r\nConnection: close\r\n" in answer.split(b"\r\n\r\n", 1)[0] + b"\r\n"
    ok = get(address, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")  # the next poller is served
    assert ok.startswith(b"HTTP/1.1 200 ") and b'"verdict"' in ok
