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
    METHOD_RESULTS,
    PROTOCOL_VERSION,
    BusyReason,
    ErrorReply,
    Hello,
    Method,
    Reply,
    Status,
    StatusEvent,
    TimelineSpan,
    exclusions_request,
    keep_request,
    let_sleep_request,
    parse_line,
    ping_request,
    request_line,
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


EXAMPLE_PARAMS: dict[Method, dict[str, object]] = {
    Method.SETTINGS: CeilingSettings().as_request_params(),
    Method.HANDOFF: {"bundle": "/nonexistent/wr-agent.pyz", "sha256": "0" * 64},
    Method.TIMELINE: {"since": 0},
    Method.EXCLUSIONS: {"names": ["watch"]},
}
"""Parameters that make a method do something (a method without a row here is sent bare)."""


def test_every_method_the_app_knows_is_one_the_agent_answers(agent) -> None:  # type: ignore[no-untyped-def]
    """Each `Method` against the real agent: never `unsupported`, and a reply the app's model for it reads."""
    from wr_agent import PROTOCOL
    from wr_agent.server import METHODS

    assert set(METHOD_RESULTS) == set(Method), "a Method without a result model"
    assert set(METHODS) == {m.value for m in Method}, "the app's and the agent's method registries differ"
    assert PROTOCOL == PROTOCOL_VERSION
    wire = Wire(agent.sock)
    wire.line()
    for number, method in enumerate(Method, start=1):
        reply = wire.ask(request_line(number, method, **EXAMPLE_PARAMS.get(method, {})))
        if isinstance(reply, ErrorReply):
            assert reply.error.code != "unsupported", f"the agent does not know {method.value}"
            assert method is Method.HANDOFF and reply.error.code == "failed"  # no such bundle: nothing handed off
        else:
            assert isinstance(reply, Reply) and reply.id == number
            reply.read(method)
        assert f"`{method.value}`" in DOC.read_text(), f"docs/protocol.md does not name {method.value}"


def _probes():  # type: ignore[no-untyped-def]
    """(field, value, accepted?) just inside and just outside each bound of the app's table."""
    from workroom.core.ceiling import SETTING_FIELDS

    for field in SETTING_FIELDS:
        if field.minimum is not None and field.maximum is not None:
            for value, ok in ((field.minimum, True), (field.minimum - 0.5, False), (field.maximum, True),
                              (field.maximum + 0.5, False)):
                yield field.name, value, ok
        else:
            yield from ((field.name, True, True), (field.name, False, True), (field.name, 1, False),
                        (field.name, "yes", False))


def test_the_agent_holds_the_apps_settings_table(agent) -> None:  # type: ignore[no-untyped-def]
    """Every setting of the app's table against the real agent: the same names and defaults, and each bound
    the same (just inside accepted, just outside refused); the app's own check agrees with the agent's."""
    from workroom.core.ceiling import SETTING_FIELDS, SettingsError, check_setting
    from wr_agent.settings import FIELDS

    assert [f.name for f in FIELDS] == [f.name for f in SETTING_FIELDS]
    fresh = agent.status()
    assert {f.name: fresh[f.name] for f in SETTING_FIELDS} == {f.name: f.default for f in SETTING_FIELDS}
    wire = Wire(agent.sock)
    wire.line()
    base = CeilingSettings().as_request_params()
    for number, (name, value, ok) in enumerate(_probes(), start=1):
        reply = wire.ask(request_line(number, Method.SETTINGS, **{**base, name: value}))
        try:
            check_setting(name, value)
            app_ok = True
        except SettingsError:
            app_ok = False
        assert app_ok is ok, (name, value)
        if ok:
            assert isinstance(reply, Reply) and reply.status().settings_values[name] == value, (name, value)
        else:
            assert isinstance(reply, ErrorReply) and reply.error.code in ("out_of_range", "invalid"), (name, value)
            assert name in reply.error.message


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


# -- busy reasons: every class the agent can emit, through the app's table ------------------------------------

def _drive_every_reason_class():  # type: ignore[no-untyped-def]
    """Run the real agent (its Agent, Classifier and reason table, on a fake clock and sampler) until every class
    in its table (wr_agent/reasons.py ROWS) has been in a status; returns {class: [status, ...]}."""
    from unit.agent.agentfake import make_agent
    from wr_agent import reasons as agent_reasons
    from wr_agent.settings import Settings
    from wr_agent.signals import Signals

    drivers = {  # how a real tick makes each class; a class the agent's table gains needs a line here
        "cpu": [Signals(cpu=[("cc1plus", "41", 1.0)])],
        "disk": [Signals(dstate=[("dd", "42")], coarse=True)],
        "sleep": [Signals(timer_sleep=[("sleep", "43", 5.0, 0)])],
        "fifo": [Signals(fifo_wait=[("cat", "44")])],
        "tcp": [Signals(tcp=[("psql", "45", {"peer": "10.0.0.5", "port": 5432, "since": 990.0})])],
        "tty_output": [Signals(tty_bytes=5000)],
        "keystroke": [Signals(keystroke_age=1.0)],
        "net": [Signals(net_bytes=10**6)],
        "more": [Signals(cpu=[(f"job{i}", str(100 + i), 1.0 - i / 100) for i in range(10)])],
        "hold": [Signals(cpu=[("make", "46", 1.0)]), Signals()],
        "resume": [Signals(cpu=[("make", "47", 1.0)]), "gap", Signals()],
    }
    seen: dict[str, list[dict[str, object]]] = {}
    missing = [row.id for row in agent_reasons.ROWS if row.id not in drivers and row.id not in ("operation",
                                                                                                   "restored")]
    assert not missing, f"the agent's table has classes this contract cannot make yet: {missing}"
    for cls, steps in drivers.items():
        agent, sampler, clock = make_agent(Settings(), hold_seconds=30)
        for step in steps:
            clock.t += 100.0 if step == "gap" else 1.0
            if step != "gap":
                sampler.sig = step
            agent.tick()
        seen.setdefault(cls, []).append(agent.status())
    agent, sampler, clock = make_agent(Settings())
    agent.classifier.operations = 1  # an agent-run operation in flight
    agent.tick()
    seen["operation"] = [agent.status()]
    older, sampler, clock = make_agent(Settings())  # a hand-off from an agent that kept its reasons as text
    sampler.sig = Signals(cpu=[("cc1", "5", 1.0)])
    older.tick()
    state = json.loads(json.dumps(older.handoff_state()))
    state["classifier"]["last_busy_reasons"] = ["cpu: cc1 (pid 5)"]
    agent, sampler, clock = make_agent(Settings())
    agent.restore_state(state)
    seen["restored"] = [agent.status()]
    return agent_reasons, seen


TEXTLESS_FACTS = {"peer", "port", "since"}
"""Facts of a reason its text does not carry (a TCP wait's): an older agent's text cannot give them back."""


def _same(parsed: BusyReason, data: BusyReason) -> bool:
    if (parsed.reason_class, parsed.subject, parsed.pid) != (data.reason_class, data.subject, data.pid):
        return False
    if set(data.detail) - set(parsed.detail) - TEXTLESS_FACTS:
        return False
    for key, value in parsed.detail.items():
        if key == "after":
            if not _same(BusyReason.model_validate(value), BusyReason.model_validate(data.detail["after"])):
                return False
        elif data.detail.get(key) != value:
            return False
    return True


def test_every_reason_class_the_agent_emits_has_the_apps_words() -> None:
    """The agent's reason table and the app's agree: each class the agent can emit, made by the real agent code,
    reaches the app's models as data, has a row in the app's table (words without classifier jargon, a colour,
    a legend), and its text reads back as the same data (an app talking to a text-only agent says the same)."""
    from workroom.core import busy_reasons

    agent_reasons, seen = _drive_every_reason_class()
    emitted: set[str] = set()
    for cls, statuses in seen.items():
        for raw in statuses:
            status = Status.model_validate(json.loads(json.dumps(raw)))  # as it crosses the wire
            assert len(status.structured_reasons) == len(status.busy_reasons) >= 1, (cls, raw)
            for data, text in zip(status.structured_reasons, status.busy_reasons, strict=True):
                emitted.add(data.reason_class)
                held = data.detail.get("after")
                if isinstance(held, dict):
                    emitted.add(held["class"])
                assert data.reason_class in busy_reasons.CLASSES, f"the app has no row for {data.reason_class!r}"
                words = busy_reasons.row_words(data)
                assert words, (cls, data)
                for jargon in ("pid", "cpu:", "tty:", "net:", "fifo:", "tcp:", "hold:", "resume:", "D state"):
                    assert jargon not in words, (cls, words)
                parsed = busy_reasons.parse_text(text)
                assert parsed is not None and _same(parsed, data), f"{text!r} reads back as {parsed}, not {data}"
                assert busy_reasons.colour_role(data.reason_class) in busy_reasons.COLOUR_LEGEND
            older = Status.model_validate({**raw, "structured_reasons": []})
            as_text, as_data = busy_reasons.reason_words(older), busy_reasons.reason_words(status)
            assert len(as_text) == len(as_data) and all(
                d.startswith(t) for t, d in zip(as_text, as_data, strict=True)), (cls, as_text, as_data)
    agent_classes = {row.id for row in agent_reasons.ROWS}
    assert emitted == agent_classes, f"never emitted here: {agent_classes - emitted}"
    app_classes = set(busy_reasons.CLASSES) - {busy_reasons.OTHER}
    assert app_classes == agent_classes, (f"the app's table lacks {agent_classes - app_classes}; "
                                          f"it has rows no agent emits: {app_classes - agent_classes}")
    for cls in agent_reasons.TIMELINE_CLASSES:  # what the why-awake record files reasons under
        assert cls in busy_reasons.CLASSES, cls
        assert cls == busy_reasons.OTHER or busy_reasons.strip_words(cls, "x") != "other work", cls


def test_a_real_agent_sends_its_reasons_as_data_over_the_socket(agent) -> None:  # type: ignore[no-untyped-def]
    """Over the real socket: a CPU burner shows up as data the app reads, in the app's words."""
    import subprocess
    import sys

    from workroom.core import busy_reasons

    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        wire = Wire(agent.sock)
        wire.line()
        deadline = time.monotonic() + 15
        words: list[str] = []
        while time.monotonic() < deadline:
            reply = wire.ask(status_request(1))
            assert isinstance(reply, Reply)
            status = reply.status()
            mine = [d for d in status.structured_reasons if d.pid == burner.pid]
            if mine:
                assert mine[0].reason_class == "cpu" and mine[0].subject.startswith("python")
                words = busy_reasons.reason_words(status)
                break
            time.sleep(0.3)
        assert any(w.startswith("running: python") for w in words), words
    finally:
        burner.kill()
        burner.wait(5)


def test_let_sleep_suppresses_at_once_through_the_apps_builder(tmp_path: Path) -> None:
    """`let_sleep` (the card's and tray's "Let it sleep"): the real agent, busy past its ceiling with a prompt
    whose timeout is ten minutes away, answers published IDLE at once; its heartbeat stops and its health
    endpoint says not busy. The request comes from the app's builder, the reply goes through its parser."""
    import subprocess
    import urllib.request

    heartbeats = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    heartbeats.bind(("127.0.0.1", 0))
    heartbeats.settimeout(0.2)
    sock = str(Path(private_dir(tmp_path / "run")) / "agent.sock")
    job = subprocess.Popen(["sleep", "600"])  # a job in a timer sleep is work
    running = start_agent(sock, "--workroom", "contract", "--test-min-duration", "1", "--awake-ceiling", "2",
                          "--awake-prompt-timeout", "600", "--ask-at-awake-ceiling", "--hold-seconds", "1",
                          "--heartbeat-interval", "1", "--heartbeat-target",
                          f"127.0.0.1:{heartbeats.getsockname()[1]}", "--health-listen", "127.0.0.1:0")

    def health() -> dict[str, object]:
        with urllib.request.urlopen(f"http://{running.status()['health_listen']}/v1/health", timeout=3) as reply:
            return json.loads(reply.read())  # type: ignore[no-any-return]

    def datagrams(seconds: float) -> int:
        count, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                heartbeats.recv(16)
                count += 1
            except TimeoutError:
                pass
        return count

    try:
        before = running.wait_status(lambda s: s["prompt_pending"], 20, "a prompt")
        assert before["verdict"] == "BUSY" and health()["busy"] is True and datagrams(2.5) >= 1
        wire = Wire(running.sock)
        wire.line()
        reply = wire.ask(let_sleep_request(9))
        assert isinstance(reply, Reply) and reply.id == 9
        status = reply.status()
        assert status.verdict.value == "IDLE" and status.suppressed and status.let_sleep
        assert not status.prompt_pending and status.classifier_verdict.value == "BUSY" and not status.asserting
        datagrams(0.3)  # one already in flight when the answer came
        assert datagrams(3.0) == 0 and health()["busy"] is False
        later = Status.model_validate(running.status())
        assert later.suppressed and later.let_sleep and later.verdict.value == "IDLE"
        assert "`let_sleep`" in DOC.read_text()
    finally:
        job.kill()
        job.wait()
        running.stop()
        heartbeats.close()
