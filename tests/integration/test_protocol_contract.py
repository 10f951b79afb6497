"""Contract: the real agent and the app's protocol models agree, and docs/protocol.md names what both use.

Every line the agent sends here goes through the app's own parser (`workroom.core.protocol.parse_line`),
every method is called through the app's own `AgentClient.call`, and the app's request lines are what the
agent accepts. Both sides real; nothing mocked.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
from integration.agent.agentrun import private_dir, start_agent
from pydantic import BaseModel
from workroom.core.ceiling import CeilingSettings
from workroom.core.protocol import (
    METHODS,
    PROTOCOL_VERSION,
    BusyReason,
    ErrorReply,
    HandoffResult,
    Hello,
    Method,
    PingResult,
    Reply,
    Status,
    StatusEvent,
    TimelineReply,
    TimelineSpan,
    UserExclusions,
    parse_line,
    request_line,
)
from workroom.remote.agent_client import AgentClient

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


M = TypeVar("M", bound=BaseModel)


def read_as(model: type[M], message: object, method: Method) -> M:
    """A reply read as `method`'s row says, and that row's model is `model`."""
    assert isinstance(message, Reply), message
    result = message.read(method)
    assert isinstance(result, model), result
    return result


def raw_line(request_id: int, method: str, **params: object) -> bytes:
    """A request line the app would never send (out of range, a test agent's lower bounds): written by hand."""
    return json.dumps({"id": request_id, "method": method, **params}).encode() + b"\n"


T = TypeVar("T")


def with_client(sock: str, use: Callable[[AgentClient], Awaitable[T]]) -> T:
    """`use` the app's own client over the app's own local link to the agent at `sock`, after its hello."""
    from workroom.remote.agent_link import open_unix_link

    async def run() -> T:
        link = await open_unix_link(sock, None)
        try:
            await link.client.hello(timeout=10)
            return await use(link.client)
        finally:
            link.close()

    return asyncio.run(run())


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
    for method in (Method.STATUS, Method.SUBSCRIBE, Method.KEEP):
        reply = wire.ask(request_line(7, method))
        assert isinstance(reply, Reply) and reply.id == 7
        read_as(Status, reply, method)
    assert read_as(PingResult, wire.ask(request_line("p", Method.PING)), Method.PING).monotonic > 0
    asked = CeilingSettings(ceiling_seconds=3600, prompt_timeout_seconds=120).as_request_params()
    changed = read_as(Status, wire.ask(request_line(8, Method.SETTINGS, **asked)), Method.SETTINGS)
    assert changed.ceiling_seconds == 3600 and changed.prompt_timeout_seconds == 120


EXAMPLE_PARAMS: dict[Method, dict[str, object]] = {
    Method.SETTINGS: CeilingSettings().as_request_params(),
    Method.TIMELINE: {"since": 0},
    Method.EXCLUSIONS: {"add": ["watch"], "remove": ["make"]},
}
"""Parameters that make a method do something (a method without a row here is sent bare; `handoff` gets a
real bundle of the agent)."""


def test_every_method_the_app_knows_is_one_the_agent_answers(agent, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Each `Method` through the app's `AgentClient.call` against the real agent: every one answered (never
    `unsupported`), with the model its row in `METHODS` names. The hand-off goes last: into a real bundle."""
    import hashlib

    from workroom.remote.agent_client import AgentRefused
    from wr_agent import PROTOCOL, bundle
    from wr_agent.server import METHODS as AGENT_METHODS

    assert set(METHODS) == set(Method), "a Method without its row"
    assert set(AGENT_METHODS) == {m.value for m in Method}, "the app's and the agent's method registries differ"
    assert PROTOCOL == PROTOCOL_VERSION
    pyz = tmp_path / "wr-agent.pyz"
    pyz.write_bytes(bundle.bundle_bytes())
    params = {**EXAMPLE_PARAMS,
              Method.HANDOFF: {"bundle": str(pyz), "sha256": hashlib.sha256(pyz.read_bytes()).hexdigest()}}

    async def every_method(client: AgentClient) -> dict[Method, BaseModel | AgentRefused]:
        answers: dict[Method, BaseModel | AgentRefused] = {}
        for method in sorted(Method, key=lambda m: m is Method.HANDOFF):
            try:
                answers[method] = await client.call(method, timeout=10, **params.get(method, {}))
            except AgentRefused as refused:
                answers[method] = refused
        return answers

    answers = with_client(agent.sock, every_method)
    assert list(answers) and set(answers) == set(Method)
    for method, answer in answers.items():
        assert not isinstance(answer, AgentRefused), f"the agent refused {method.value}: {answer.message}"
        assert type(answer) is METHODS[method].result, (method, answer)
        assert f"`{method.value}`" in DOC.read_text(), f"docs/protocol.md does not name {method.value}"
    handed = answers[Method.HANDOFF]
    assert isinstance(handed, HandoffResult) and handed.accepted


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
        reply = wire.ask(raw_line(number, Method.SETTINGS.value, **{**base, name: value}))
        try:
            check_setting(name, value)
            app_ok = True
        except SettingsError:
            app_ok = False
        assert app_ok is ok, (name, value)
        if ok:
            assert read_as(Status, reply, Method.SETTINGS).settings_values[name] == value, (name, value)
        else:
            assert isinstance(reply, ErrorReply) and reply.error.code in ("out_of_range", "invalid"), (name, value)
            assert name in reply.error.message


def test_a_settings_change_is_pushed_as_an_event_the_app_reads(agent) -> None:  # type: ignore[no-untyped-def]
    sub, other = Wire(agent.sock), Wire(agent.sock)
    parse_line(sub.line()), parse_line(other.line())
    assert isinstance(sub.ask(request_line(1, Method.SUBSCRIBE)), Reply)
    other.ask(request_line(2, Method.SETTINGS, **CeilingSettings(ceiling_seconds=7200).as_request_params()))
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
    modelled = set(Status.model_fields) - {"proof"}  # only in the answer to a subscribe that asks (tested below)
    assert modelled <= sent, f"fields the app expects that this agent does not send: {modelled - sent}"
    assert json.loads(json.dumps(status)) == status  # plain JSON, nothing exotic


def test_timeline_and_exclusions_parse_with_the_apps_models(agent) -> None:  # type: ignore[no-untyped-def]
    """The why-awake record and the "never work" names: the agent's replies through the app's models."""
    wire = Wire(agent.sock)
    wire.line()
    deadline = time.monotonic() + 10
    spans: tuple[TimelineSpan, ...] = ()
    while not spans and time.monotonic() < deadline:  # the first tick starts the record, the second counts
        result = read_as(TimelineReply, wire.ask(request_line(1, Method.TIMELINE)), Method.TIMELINE)
        spans = result.spans
        time.sleep(0.3)
    assert spans and spans[-1].state in {"busy", "held", "idle"} and spans[-1].end <= result.now + 1
    assert abs(result.now - time.time()) < 5 and result.problem is None
    later = wire.ask(request_line(2, Method.TIMELINE, since=result.now + 3600))
    assert read_as(TimelineReply, later, Method.TIMELINE).spans == ()
    bad = wire.ask(b'{"id":3,"method":"timeline","since":"yesterday"}\n')
    assert isinstance(bad, ErrorReply) and bad.error.code == "invalid"

    def names(message: object) -> tuple[str, ...]:
        return read_as(UserExclusions, message, Method.EXCLUSIONS).names

    assert names(wire.ask(request_line(4, Method.EXCLUSIONS))) == ()
    assert names(wire.ask(request_line(5, Method.EXCLUSIONS, names=["watch", "top"]))) == ("top", "watch")
    assert names(wire.ask(request_line(6, Method.EXCLUSIONS))) == ("top", "watch")
    refused = wire.ask(request_line(7, Method.EXCLUSIONS, names=["a/b"]))
    assert isinstance(refused, ErrorReply) and refused.error.code == "invalid"
    raw = wire.ask(b'{"id":8,"method":"timeline"}\n')
    assert isinstance(raw, Reply)
    sent_keys = set(raw.result) | {k for span in raw.result["spans"] for k in span}
    for name in ("`timeline`", "`exclusions`", *(f"`{key}`" for key in sent_keys)):
        assert name in DOC.read_text(), f"docs/protocol.md does not name {name}"


def test_a_full_record_comes_to_the_app_in_pages_without_loss(tmp_path: Path) -> None:
    """A record at its byte budget is more than one protocol line: the app's `call` pages through it."""
    sock = str(Path(private_dir(tmp_path / "run")) / "agent.sock")
    now = time.time()
    spans = [[round(now - 6 * 86400 + 61 * i, 1), round(now - 6 * 86400 + 61 * (i + 1), 1),
              "busy" if i % 2 else "idle", "cpu" if i % 2 else "", "cc1" if i % 2 else ""] for i in range(2500)]
    Path(sock + ".timeline").write_text(json.dumps({"format": 1, "last_note": None, "spans": spans}))
    running = start_agent(sock, "--candidates", "user", "--no-heartbeat")

    async def whole(client: AgentClient) -> TimelineReply:
        return await client.call(Method.TIMELINE, timeout=10)

    try:
        wire = Wire(sock)
        wire.line()
        one_page = read_as(TimelineReply, wire.ask(request_line(1, Method.TIMELINE)), Method.TIMELINE)
        reply = with_client(sock, whole)
    finally:
        running.stop()
    assert one_page.more_since is not None and len(one_page.spans) < 2500 <= len(reply.spans)
    starts = [s.start for s in reply.spans]
    assert starts == sorted(set(starts))  # in order, nothing twice
    assert starts[0] == pytest.approx(spans[0][0])
    assert reply.more_since is None


@pytest.mark.root
def test_the_status_that_reports_idle_tells_the_busy_span_the_app_reads(tmp_path: Path) -> None:
    """`last_busy_span` from the real agent, through the app's model and its "finished" rule: a CPU job of
    about 3 s, then the IDLE event carries how long it ran and its class, with no request for the record.
    In a PID namespace of its own, so other work on this machine cannot stretch the span."""
    import os
    import sys

    from integration.agent.agentrun import Agent, PidNamespace, agent_env, serve_argv, wait_answering
    from workroom.core.notification_rules import finished_span
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
        previous = read_as(Status, wire.ask(request_line(1, Method.SUBSCRIBE)), Method.SUBSCRIBE)
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
        "lock": [Signals(lock_wait=[("flock", "49")])],
        "tcp": [Signals(tcp=[("psql", "45", {"peer": "10.0.0.5", "port": 5432, "since": 990.0})])],
        "unix": [Signals(unix=[("psql", "48", {"path": "/var/run/postgresql/.s.PGSQL.5432", "since": 990.0})])],
        "tty_output": [Signals(tty_bytes=5000)],
        "keystroke": [Signals(keystroke_age=1.0)],
        "net": [Signals(net_bytes=10**6)] * 3,
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


TEXTLESS_FACTS = {"peer", "port", "since", "path"}
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
            status = read_as(Status, wire.ask(request_line(1, Method.STATUS)), Method.STATUS)
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


def test_let_sleep_suppresses_at_once_through_the_apps_call(tmp_path: Path) -> None:
    """`let_sleep` (the card's and tray's "Let it sleep"): the real agent, busy past its ceiling with a prompt
    whose timeout is ten minutes away, answers published IDLE at once; its heartbeat stops and its health
    endpoint says not busy. The request and its reply go through the app's `AgentClient.call`."""
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
        async def let_sleep(client: AgentClient) -> Status:
            return await client.call(Method.LET_SLEEP, timeout=10)

        status = with_client(running.sock, let_sleep)
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


def test_the_agent_proves_who_it_is_on_the_subscribe_that_asks(agent) -> None:  # type: ignore[no-untyped-def]
    """A `subscribe` with a challenge is answered with the proof the app checks, made with the key the agent
    keeps beside its socket (the one the install probe hands the app); a malformed challenge is refused."""
    from workroom.remote.agent_proof import new_challenge, proves
    from wr_agent.agent_key import read_key

    challenge = new_challenge()
    answer = with_client(agent.sock, lambda client: client.subscribe(challenge=challenge))
    key = read_key(agent.sock)
    assert key is not None and proves(key, challenge, answer.proof)
    assert not proves(key, new_challenge(), answer.proof)
    assert with_client(agent.sock, lambda client: client.subscribe()).proof is None  # not asked: no proof
    wire = Wire(agent.sock)
    wire.line()
    refused = wire.ask(raw_line(3, "subscribe", challenge="not hex"))
    assert isinstance(refused, ErrorReply) and refused.error.code == "invalid"
