"""Busy reasons in developer words, from the agent's data or (an older agent) its text: one table for every face.

Every class the agent can emit is driven through this table against the real agent code in
tests/integration/test_protocol_contract.py; these are the table's own rules.
"""

from __future__ import annotations

from typing import Any

import pytest
from status_factory import make_busy
from workroom.core import busy_reasons as br
from workroom.core.protocol import BusyReason

pytestmark = pytest.mark.unit


def words_of(raw: str) -> str:
    """What a text-only (older) agent's reason reads as."""
    return br.reason_words(make_busy(busy_reasons=[raw]))[0]


@pytest.mark.parametrize(("raw", "words"), [
    ("cpu: cc1plus (pid 4121)", "compiling: cc1plus"),
    ("cpu: rustc (pid 7) (coarse)", "compiling: rustc"),
    ("cpu: make (pid 9)", "building: make"),
    ("cpu: pytest (pid 9)", "testing: pytest"),
    ("cpu: python3 (pid 12)", "running: python3"),
    ("cpu: my prog (pid 12)", "running: my prog"),
    ("disk: dd (pid 3) in D state", "waiting on disk: dd"),
    ("disk: tar (pid 3) in D state (coarse)", "waiting on disk: tar"),
    ("sleep: sleep (pid 44)", "waiting in a job: sleep"),
    ("fifo: cat (pid 5) waiting for its partner", "waiting in a pipeline: cat"),
    ("tcp: psql (pid 5)", "waiting on the network: psql"),
    ("tcp: curl (pid 5)", "downloading: curl"),
    ("tcp: ssh (pid 5)", "ssh session: ssh"),
    ("tty: output", "terminal output"),
    ("tty: keystroke", "someone typing"),
    ("net: traffic", "network traffic"),
    ("agent: operation in flight", "the agent's own task"),
    ("hold: after cpu: cc1plus (pid 4121)", "compiling: cc1plus (just now)"),
    ("hold: after restored", "work seen before the agent restarted (just now)"),
    ("resume: measuring after a wake", "measuring after a wake"),
    ("+2 more", "+2 more"),
    ("something new: x", "something new: x"),
    ("ssh session: alice from 10.0.0.5", "ssh session: alice from 10.0.0.5"),  # no agent writes this form
])
def test_an_older_agents_text_reads_in_plain_words(raw: str, words: str) -> None:
    assert words_of(raw) == words


def test_no_classifier_jargon_for_any_form_the_table_knows() -> None:
    for spec in br.CLASSES.values():
        if not spec.text:
            continue
        raw = spec.text.format(subject="job", pid=7, count=2, after="cpu: cc1 (pid 1)")
        words = words_of(raw)
        for jargon in ("D state", "hold:", "net:", "pid", "tty:", "cpu:", "fifo:", "tcp:", "resume:", "agent:"):
            assert jargon not in words, (raw, words, jargon)


def reason(cls: str, subject: str = "", pid: int | None = None, **detail: Any) -> dict[str, Any]:
    return {"class": cls, "subject": subject, "pid": pid, "detail": detail}


def test_the_agents_data_is_read_not_its_text() -> None:
    # The text says one thing and the data another: the data wins (the text is for people and older apps).
    status = make_busy(busy_reasons=["cpu: make (pid 9)"], structured_reasons=[reason("cpu", "cc1plus", 9)])
    assert br.reason_words(status) == ["compiling: cc1plus"]


def test_a_class_this_app_does_not_know_falls_back_to_its_text() -> None:
    status = make_busy(busy_reasons=["gpu: trainer (pid 5)", "cpu: cc1 (pid 6)"],
                       structured_reasons=[reason("gpu", "trainer", 5), reason("cpu", "cc1", 6)])
    assert br.reason_words(status) == ["gpu: trainer (pid 5)", "compiling: cc1"]
    # A list that does not pair with the text (a broken agent) is not trusted: the text is read instead.
    lopsided = make_busy(busy_reasons=["cpu: cc1 (pid 6)", "tty: output"], structured_reasons=[reason("net")])
    assert br.reason_words(lopsided) == ["compiling: cc1", "terminal output"]


def test_same_words_once_in_order() -> None:
    status = make_busy(busy_reasons=["cpu: cc1plus (pid 1)", "cpu: cc1plus (pid 2)", "tty: output"])
    assert br.reason_words(status) == ["compiling: cc1plus", "terminal output"]


def test_a_tcp_wait_names_its_peer_and_says_for_how_long_counted_here() -> None:
    data = BusyReason.model_validate(reason("tcp", "psql", 5, peer="10.0.0.5", port=5432, since=100.0))
    assert br.row_words(data) == "waiting on the network: psql (10.0.0.5:5432)"
    assert br.row_words(data, agent_now=100.0 + 150) == "waiting on the network: psql (10.0.0.5:5432, for 2 min 30 s)"
    v6 = BusyReason.model_validate(reason("tcp", "curl", 5, peer="2001:db8::1", port=443))
    assert br.row_words(v6) == "downloading: curl ([2001:db8::1]:443)"
    odd = BusyReason.model_validate(reason("tcp", "nc", 5, peer=7, port="x", since="soon"))
    assert br.row_words(odd, agent_now=1e9) == "waiting on the network: nc"


def test_the_text_of_every_row_reads_back_as_its_data() -> None:
    for spec in br.CLASSES.values():
        if not spec.text:
            continue
        raw = spec.text.format(subject="job x", pid=7, count=2, after="cpu: cc1 (pid 1) (coarse)")
        parsed = br.parse_text(raw)
        assert parsed is not None and parsed.reason_class == spec.id, raw
        if "{pid}" in spec.text:
            assert (parsed.subject, parsed.pid) == ("job x", 7)
    held = br.parse_text("hold: after cpu: cc1 (pid 1) (coarse)")
    assert held is not None and held.detail["after"]["detail"] == {"coarse": True}
    assert br.parse_text("nonsense") is None


@pytest.mark.parametrize(("cls", "subject", "words"), [
    ("cpu", "cc1", "compiling"), ("cpu", "make", "building"), ("disk", "cc1plus", "compiling"),
    ("cpu", "pytest", "testing"), ("tcp", "ssh", "ssh session"), ("tcp", "curl", "downloading"),
    ("cpu", "curl", "running curl"), ("cpu", "python3", "running python3"), ("keystroke", "", "someone typing"),
    ("net", "", "network traffic"), ("sleep", "sh", "waiting in a job (sh)"),
    ("tcp", "psql", "waiting on the network (psql)"), ("fifo", "cat", "waiting in a pipeline (cat)"),
    ("disk", "dd", "waiting on disk (dd)"), ("cpu", "", "CPU work"), ("operation", "", "the agent's own task"),
    ("other", "", "other work"), ("weird", "x", "other work"),
])
def test_strip_words(cls: str, subject: str, words: str) -> None:
    assert br.strip_words(cls, subject) == words


@pytest.mark.parametrize(("subject", "detail", "words"), [
    ("psql", {"peer": "10.0.3.7", "port": 5432}, "waiting on the network (psql → 10.0.3.7:5432)"),
    ("psql", {"peer": "::1", "port": 5432}, "waiting on the network (psql → [::1]:5432)"),
    ("curl", {"peer": "151.101.1.69", "port": 443}, "downloading (curl → 151.101.1.69:443)"),
    ("node", {"peer": "127.0.0.1", "local_port": 8080}, "serving port 8080 (node ← 127.0.0.1)"),
    ("", {"peer": "10.0.3.7"}, "waiting on the network (→ 10.0.3.7)"),
    ("psql", {}, "waiting on the network (psql)"),
])
def test_strip_words_name_a_network_waits_peer(subject: str, detail: dict[str, Any], words: str) -> None:
    assert br.strip_words("tcp", subject, **detail) == words


def test_one_list_of_process_names_each_in_one_activity() -> None:
    """`make` was "building: make" in a row and "compiling" in the strip: one list now, one word per name."""
    seen: dict[str, str] = {}
    for act in br.ACTIVITIES:
        for name in act.names:
            assert name not in seen, f"{name} is both {seen[name]} and {act.words}"
            seen[name] = act.words
            assert len(name) <= 15, f"{name}: a process name (comm) is at most 15 characters"
    assert br.strip_words("cpu", "make") == "building"
    assert br.row_words(BusyReason.model_validate(reason("cpu", "make", 1))) == "building: make"


def test_every_class_has_a_colour_role_with_a_legend() -> None:
    for spec in br.CLASSES.values():
        assert spec.colour in br.COLOUR_LEGEND
    assert br.colour_role("sleep") is br.colour_role("fifo") is br.ColourRole.WAITING
    assert br.colour_role("weird") is br.ColourRole.OTHER


def test_a_connection_that_came_in_says_which_port_it_serves() -> None:
    data = BusyReason.model_validate(reason("tcp", "node", 7, peer="127.0.0.1", port=51234, since=100.0,
                                            local_port=8080))
    assert br.row_words(data, agent_now=103.0) == "serving port 8080: node (127.0.0.1:51234, for 3 s)"
