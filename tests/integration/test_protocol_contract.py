"""Contract: the real agent and the app's protocol models agree, and docs/protocol.md names what both use.

Every line the agent sends here goes through the app's own parser (`workroom.core.protocol.parse_line`)
and the app's request builders produce what the agent accepts. Both sides real; nothing mocked.
"""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest
from integration.agent.agentrun import private_dir, start_agent
from workroom.core.ceiling import CeilingSettings
from workroom.core.protocol import (
    ErrorReply,
    Hello,
    Reply,
    Status,
    StatusEvent,
    TimelineSpan,
    exclusions_request,
    keep_request,
    parse_line,
    ping_request,
    settings_request,
    status_request,
    subscribe_request,
    timeline_request,
)

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


class Wire:
    """A raw connection: bytes out from the app's builders, lines in through the app's parser."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(path)
        self.buf = b""

    def line(self) -> bytes:
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def ask(self, request: bytes):  # type: ignore[no-untyped-def]
        self.sock.sendall(request)
        while True:
            message = parse_line(self.line())
            if not isinstance(message, StatusEvent):
                return message


@pytest.fixture
def agent(tmp_path: Path):  # type: ignore[no-untyped-def]
    sock = str(Path(private_dir(tmp_path / "run")) / "agent.sock")
    running = start_agent(sock, "--workroom", "contract", "--candidates", "user", "--no-heartbeat",
                          "--hold-seconds", "2")
    yield running
    running.stop()


def test_every_message_parses_with_the_apps_models(agent) -> None:  # type: ignore[no-untyped-def]
    wire = Wire(agent.sock)
    hello = parse_line(wire.line())
    assert isinstance(hello, Hello) and hello.speaks_our_protocol and len(hello.build) == 64
    for build in (status_request, subscribe_request, keep_request):
        reply = wire.ask(build(7))
        assert isinstance(reply, Reply) and reply.id == 7
        assert isinstance(reply.status(), Status)
    ping = wire.ask(ping_request("p"))
    assert isinstance(ping, Reply) and ping.ping_monotonic() > 0
    changed = wire.ask(settings_request(8, CeilingSettings(ceiling_seconds=3600, prompt_timeout_seconds=120)))
    assert changed.status().ceiling_seconds == 3600 and changed.status().prompt_timeout_seconds == 120


def test_a_settings_change_is_pushed_as_an_event_the_app_reads(agent) -> None:  # type: ignore[no-untyped-def]
    sub, other = Wire(agent.sock), Wire(agent.sock)
    parse_line(sub.line()), parse_line(other.line())
    assert isinstance(sub.ask(subscribe_request(1)), Reply)
    other.ask(settings_request(2, CeilingSettings(ceiling_seconds=7200)))
    event = parse_line(sub.line())
    assert isinstance(event, StatusEvent) and event.status.ceiling_seconds == 7200


@pytest.mark.parametrize(("raw", "code"), [
    (b'{"id":1,"method":"settings","ceiling_seconds":10,"prompt_timeout_seconds":600,"ask_at_ceiling":false}\n',
     "out_of_range"),
    (b'{"id":1,"method":"settings","ceiling_seconds":"1h","prompt_timeout_seconds":600,"ask_at_ceiling":false}\n',
     "invalid"),
    (b'{"id":1,"method":"reboot"}\n', "unsupported"),
    (b"not json\n", "invalid"),
])
def test_errors_are_the_documented_codes(agent, raw: bytes, code: str) -> None:  # type: ignore[no-untyped-def]
    wire = Wire(agent.sock)
    wire.line()
    reply = wire.ask(raw)
    assert isinstance(reply, ErrorReply) and reply.error.code == code
    assert reply.to_user_error().message
    assert f"`{code}`" in DOC.read_text()


def test_the_document_names_every_status_field_both_sides_use(agent) -> None:  # type: ignore[no-untyped-def]
    status = agent.status()
    first_cells = re.findall(r"^\| ([^|]*`[a-z_]+`[^|]*) \|", DOC.read_text(), re.M)
    documented = {name for cell in first_cells for name in re.findall(r"`([a-z_]+)`", cell)}
    sent = set(status)
    assert sent <= documented, f"fields the agent sends but docs/protocol.md does not name: {sent - documented}"
    modelled = set(Status.model_fields)
    assert modelled <= sent, f"fields the app expects that this agent does not send: {modelled - sent}"
    assert json.loads(json.dumps(status)) == status  # plain JSON, nothing exotic


def test_timeline_and_exclusions_parse_with_the_apps_models(agent) -> None:  # type: ignore[no-untyped-def]
    """The why-awake record and the "never work" names: the agent's replies through the app's models."""
    wire = Wire(agent.sock)
    wire.line()
    deadline = time.monotonic() + 10
    spans: tuple[TimelineSpan, ...] = ()
    while not spans and time.monotonic() < deadline:  # the first tick starts the record, the second counts
        reply = wire.ask(timeline_request(1))
        assert isinstance(reply, Reply)
        result = reply.timeline()
        spans = result.spans
        time.sleep(0.3)
    assert spans and spans[-1].state in {"busy", "held", "idle"} and spans[-1].end <= result.now + 1
    assert abs(result.now - time.time()) < 5 and result.problem is None
    later = wire.ask(timeline_request(2, since=result.now + 3600))
    assert isinstance(later, Reply) and later.timeline().spans == ()
    bad = wire.ask(b'{"id":3,"method":"timeline","since":"yesterday"}\n')
    assert isinstance(bad, ErrorReply) and bad.error.code == "invalid"

    assert wire.ask(exclusions_request(4)).exclusions().names == ()  # type: ignore[union-attr]
    changed = wire.ask(exclusions_request(5, ["watch", "top"]))
    assert isinstance(changed, Reply) and changed.exclusions().names == ("top", "watch")
    assert wire.ask(exclusions_request(6)).exclusions().names == ("top", "watch")  # type: ignore[union-attr]
    refused = wire.ask(exclusions_request(7, ["a/b"]))
    assert isinstance(refused, ErrorReply) and refused.error.code == "invalid"
    raw = wire.ask(b'{"id":8,"method":"timeline"}\n')
    assert isinstance(raw, Reply)
    sent_keys = set(raw.result) | {k for span in raw.result["spans"] for k in span}
    for name in ("`timeline`", "`exclusions`", *(f"`{key}`" for key in sent_keys)):
        assert name in DOC.read_text(), f"docs/protocol.md does not name {name}"


def test_a_full_record_comes_to_the_app_in_pages_without_loss(tmp_path: Path) -> None:
    """A record at its byte budget is more than one protocol line: the app's client pages through it."""
    import asyncio

    from workroom.remote.agent_client import AgentClient

    sock = str(Path(private_dir(tmp_path / "run")) / "agent.sock")
    now = time.time()
    spans = [[round(now - 6 * 86400 + 61 * i, 1), round(now - 6 * 86400 + 61 * (i + 1), 1),
              "busy" if i % 2 else "idle", "cpu" if i % 2 else "", "cc1" if i % 2 else ""] for i in range(2500)]
    Path(sock + ".timeline").write_text(json.dumps({"format": 1, "last_note": None, "spans": spans}))
    running = start_agent(sock, "--candidates", "user", "--no-heartbeat")

    async def fetch() -> tuple[int, int, list[float]]:
        reader, writer = await asyncio.open_unix_connection(sock, limit=1 << 20)

        async def send(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        client = AgentClient(send)

        async def pump() -> None:
            while line := await reader.readline():
                client.feed_line(line)
            client.feed_eof()

        pumping = asyncio.ensure_future(pump())
        try:
            await client.hello()
            first = await client._request("timeline", timeline_request, 10)  # one page, as sent
            reply = await client.timeline(None)
            return len(first.timeline().spans), len(reply.spans), [s.start for s in reply.spans]
        finally:
            writer.close()
            pumping.cancel()

    try:
        one_page, total, starts = asyncio.run(fetch())
    finally:
        running.stop()
    assert one_page < 2500 <= total
    assert starts == sorted(set(starts))  # in order, nothing twice
    assert starts[0] == pytest.approx(spans[0][0])


@pytest.mark.root
def test_the_status_that_reports_idle_tells_the_busy_span_the_app_reads(tmp_path: Path) -> None:
    """`last_busy_span` from the real agent, through the app's model and its "finished" rule: a CPU job of
    about 3 s, then the IDLE event carries how long it ran and its class, with no request for the record.
    In a PID namespace of its own, so other work on this machine cannot stretch the span."""
    import os
    import sys

    from integration.agent.agentrun import Agent, PidNamespace, agent_env, serve_argv, wait_answering
    from workroom.core.notices import finished_span
    from workroom.core.protocol import Verdict

    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces")
    ns = PidNamespace()
    try:
        sock = str(Path(private_dir(tmp_path / "run")) / "agent.sock")
        proc = ns.popen(serve_argv(sock, "--workroom", "contract", "--no-heartbeat", "--hold-seconds", "2"),
                        env=agent_env())
        wait_answering(sock, proc)
        Agent(sock, proc).wait_status(lambda st: st["verdict"] == "IDLE", 20, "the namespace to be idle")
        wire = Wire(sock)
        parse_line(wire.line())
        first = wire.ask(subscribe_request(1))
        assert isinstance(first, Reply)
        previous = first.status()
        burn = "import time\nend = time.time() + 3\nwhile time.time() < end: pass"
        job = ns.popen([sys.executable, "-c", burn])
        seen_busy = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            event = parse_line(wire.line())
            if not isinstance(event, StatusEvent):
                continue
            status = event.status
            seen_busy = seen_busy or status.verdict is Verdict.BUSY
            if seen_busy and status.verdict is Verdict.IDLE and previous.verdict is Verdict.BUSY:
                span = status.last_busy_span
                assert span is not None and not span.slept
                assert span.reason_class == "cpu" and span.subject, span
                assert 2.0 <= span.seconds <= 6.0, span
                assert span.ended <= status.monotonic + 0.01
                assert finished_span(previous, status, 2.0) == span
                assert finished_span(status, status, 2.0) is None  # the same status again is not a new finish
                assert finished_span(previous, status, 10.0) is None  # shorter than asked for
                ns.kill(job)
                return
            previous = status
        pytest.fail(f"no IDLE event with the busy span within 30 s (saw busy: {seen_busy})")
    finally:
        ns.close()
