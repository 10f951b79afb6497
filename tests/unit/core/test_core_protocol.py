"""Protocol models and the line parser, on good lines and hostile ones (docs/protocol.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unit.core.status_factory import BUILD, busy_dict, status_dict
from workroom.core.ceiling import CeilingSettings
from workroom.core.protocol import (
    MAX_LINE_BYTES,
    METHODS,
    AgentCall,
    ErrorReply,
    HandoffResult,
    Hello,
    Method,
    PingResult,
    PromptEvent,
    ProtocolError,
    Reply,
    Status,
    StatusEvent,
    UserExclusions,
    Verdict,
    parse_line,
    request_line,
)

pytestmark = pytest.mark.unit


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def test_hello() -> None:
    message = parse_line(line({"hello": "wr-agent", "protocol": 1, "version": "0.1.0", "build": BUILD}))
    assert isinstance(message, Hello) and message.speaks_our_protocol
    other = parse_line(line({"hello": "wr-agent", "protocol": 2, "version": "9", "build": BUILD}))
    assert isinstance(other, Hello) and not other.speaks_our_protocol


def test_status_event_with_unknown_fields_is_tolerated() -> None:
    data = busy_dict(future_field={"x": 1})
    data["keep_awake"]["future"] = True
    message = parse_line(line({"event": "status", "status": data, "also_new": 3}))
    assert isinstance(message, StatusEvent)
    assert message.status.verdict is Verdict.BUSY and message.status.busy
    assert message.status.busy_reasons == ("cpu: cargo (pid 4121)",)
    assert message.status.keep_awake is not None and message.status.keep_awake.interval_seconds == 60


def test_status_from_an_older_agent_without_keep_awake_fields() -> None:
    data = status_dict()
    for key in ("keep_awake", "asserting", "settings_error", "sampler", "prompt_deadline"):
        del data[key]
    message = parse_line(line({"event": "status", "status": data}))
    assert isinstance(message, StatusEvent)
    assert message.status.keep_awake is None and message.status.asserting is None


def test_prompt_event_and_text_input() -> None:
    text = json.dumps({"event": "awake_ceiling_prompt", "workroom": "box1", "awake_seconds": 14400,
                       "prompt_deadline": 2000.5})
    message = parse_line(text)
    assert isinstance(message, PromptEvent) and message.prompt_deadline == 2000.5


def test_replies_are_read_as_their_methods_row_says() -> None:
    status_reply = parse_line(line({"id": 3, "result": status_dict()}))
    assert isinstance(status_reply, Reply)
    status = status_reply.read(Method.STATUS)
    assert isinstance(status, Status) and status.workroom == "box1"
    ping = parse_line(line({"id": "p", "result": {"monotonic": 12.5}}))
    assert isinstance(ping, Reply)
    assert ping.read(Method.PING) == PingResult(monotonic=12.5)
    handoff = parse_line(line({"id": 4, "result": {"accepted": True}}))
    assert isinstance(handoff, Reply) and handoff.read(Method.HANDOFF) == HandoffResult(accepted=True)
    with pytest.raises(ProtocolError, match="status result"):
        ping.read(Method.STATUS)


def test_the_typed_call_says_what_the_table_says() -> None:
    """`AgentCall`'s overloads (what mypy knows a call returns) and `METHODS` (what a reply is read as at run
    time) name the same model for every method: a method missing from the overloads fails here."""
    import typing

    from pydantic import BaseModel

    typed: dict[Method, type[BaseModel]] = {}
    for overload in typing.get_overloads(AgentCall.__call__):
        hints = typing.get_type_hints(overload)
        if typing.get_origin(hints["method"]) is not typing.Literal:
            continue  # the catch-all, for code over any method
        (result,) = typing.get_args(hints["return"])
        for method in typing.get_args(hints["method"]):
            assert method not in typed, f"{method} is in two overloads"
            typed[method] = result
    assert typed == {method: row.result for method, row in METHODS.items()}
    assert set(METHODS) == set(Method), "a Method without its row"


def test_error_replies_become_user_errors() -> None:
    message = parse_line(line({"id": None, "error": {"code": "out_of_range",
                                                     "message": "ceiling_seconds must be 30 - 2592000"}}))
    assert isinstance(message, ErrorReply) and message.id is None
    error = message.to_user_error()
    assert "ceiling_seconds" in error.message and error.hint
    unknown = parse_line(line({"id": 1, "error": {"code": "brand_new", "message": "hm"}}))
    assert isinstance(unknown, ErrorReply) and unknown.to_user_error().hint == ""


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"not json\n", "not_json"),
        (b"[1,2]\n", "not_object"),
        (b'"hello"\n', "not_object"),
        (b"\xff\xfe\n", "not_utf8"),
        (b'{"hello":"wr-agent","protocol":1}\n', "invalid"),
        (b'{"hello":"wr-agent","protocol":"1","version":"x","build":"y"}\n', "invalid"),
        (b'{"hello":"other","protocol":1,"version":"x","build":"y"}\n', "invalid"),
        (b'{"event":"status","status":{}}\n', "invalid"),
        (b'{"event":"telepathy"}\n', "unknown_event"),
        (b'{"event":7}\n', "unknown_event"),
        (b'{"what":1}\n', "unknown_shape"),
        (b'{"id":true,"result":{}}\n', "invalid"),
        (b'{"id":1,"result":[]}\n', "invalid"),
        (b'{"id":1,"result":{"monotonic":NaN}}\n', "not_json"),
        (b'{"event":"awake_ceiling_prompt","workroom":"b","awake_seconds":1e999,"prompt_deadline":1}\n',
         "invalid"),
        (b"[" * 50000 + b"]" * 50000, "too_large"),
        (b"[" * 30000 + b"]" * 30000, "not_json"),
        (b"1" * 10000, "not_json"),
    ],
)
def test_hostile_lines_raise_protocol_error(raw: bytes, code: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_line(raw)
    assert caught.value.code == code
    assert caught.value.title and caught.value.message


@pytest.mark.parametrize(
    "field",
    ["verdict", "stalled", "monotonic", "workroom", "agent", "busy_reasons", "suppressed", "prompt_pending"],
)
def test_missing_required_status_field_is_an_error(field: str) -> None:
    data = status_dict()
    del data[field]
    with pytest.raises(ProtocolError, match=field):
        parse_line(line({"event": "status", "status": data}))


@pytest.mark.parametrize(
    ("field", "value"),
    [("verdict", "MAYBE"), ("stalled", "no"), ("stalled", 0), ("monotonic", "1"), ("busy_reasons", "cpu"),
     ("busy_reasons", [1]), ("awake_seconds", -1), ("monotonic", True)],
)
def test_wrongly_typed_status_field_is_an_error(field: str, value: object) -> None:
    with pytest.raises(ProtocolError, match=field):
        parse_line(line({"event": "status", "status": status_dict(**{field: value})}))


def test_oversize_limit_is_exact() -> None:
    padding = MAX_LINE_BYTES - len(b'{"id":1,"result":{"pad":""}}')
    fits = b'{"id":1,"result":{"pad":"' + b"x" * padding + b'"}}'
    assert len(fits) == MAX_LINE_BYTES
    assert isinstance(parse_line(fits + b"\n"), Reply)
    with pytest.raises(ProtocolError) as caught:
        parse_line(fits[:-2] + b'x"}}')
    assert caught.value.code == "too_large"


@settings(max_examples=400)
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_only_ever_raise_protocol_error(raw: bytes) -> None:
    try:
        parse_line(raw)
    except ProtocolError:
        pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
keys = st.sampled_from(["hello", "event", "id", "result", "error", "status", "protocol", "version", "build",
                        "workroom", "awake_seconds", "prompt_deadline", "code", "message", "monotonic"])


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, json_values | st.sampled_from(["status", "awake_ceiling_prompt", "wr-agent"]),
                       max_size=6))
def test_arbitrary_json_objects_only_ever_raise_protocol_error(obj: dict[str, Any]) -> None:
    try:
        parse_line(json.dumps(obj))
    except ProtocolError:
        pass


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(sorted(status_dict())), value=json_values)
def test_a_status_with_any_field_swapped_parses_or_raises_protocol_error(field: str, value: Any) -> None:
    try:
        message = parse_line(json.dumps({"event": "status", "status": status_dict(**{field: value})}))
    except ProtocolError as error:
        assert field in error.message or error.code == "not_json"  # NaN/Infinity are refused as JSON
    else:
        assert isinstance(message, StatusEvent)


def test_request_lines_are_single_json_lines_with_checked_parameters() -> None:
    cases = {
        request_line(1, Method.STATUS): {"id": 1, "method": "status"},
        request_line("s", Method.SUBSCRIBE): {"id": "s", "method": "subscribe"},
        request_line(2, Method.KEEP): {"id": 2, "method": "keep"},
        request_line(3, Method.PING): {"id": 3, "method": "ping"},
        request_line(4, Method.SETTINGS,
                     **CeilingSettings(ceiling_seconds=60, ask_at_ceiling=True).as_request_params()): {
            "id": 4, "method": "settings", "ceiling_seconds": 60.0, "prompt_timeout_seconds": 600.0,
            "ask_at_ceiling": True},
        request_line(5, Method.HANDOFF, bundle="/home/u/.local/share/wr/wr-agent.pyz", sha256="ab" * 32): {
            "id": 5, "method": "handoff", "bundle": "/home/u/.local/share/wr/wr-agent.pyz", "sha256": "ab" * 32},
        request_line(6, Method.TIMELINE, since=None): {"id": 6, "method": "timeline"},
        request_line(7, Method.TIMELINE, since=12): {"id": 7, "method": "timeline", "since": 12.0},
        request_line(8, Method.EXCLUSIONS): {"id": 8, "method": "exclusions"},
        request_line(9, Method.EXCLUSIONS, names=["watch"]): {"id": 9, "method": "exclusions", "names": ["watch"]},
    }
    for raw, expected in cases.items():
        assert raw.endswith(b"\n") and raw.count(b"\n") == 1
        assert json.loads(raw) == expected


@pytest.mark.parametrize(("method", "params", "words"), [
    (Method.HANDOFF, {"bundle": "/x", "sha256": "AB" * 32}, "sha256"),
    (Method.HANDOFF, {"bundle": "", "sha256": "ab" * 32}, "bundle"),
    (Method.HANDOFF, {"bundle": "/x\nrm", "sha256": "ab" * 32}, "bundle"),
    (Method.KEEP, {"now": True}, "now"),
    (Method.TIMELINE, {"since": "yesterday"}, "since"),
    (Method.EXCLUSIONS, {"names": "watch"}, "names"),
    (Method.SETTINGS, {"ceiling_seconds": float("nan")}, "ceiling_seconds"),
    (Method.SETTINGS, {"ceiling_secs": 60.0}, "ceiling_secs"),
])
def test_a_parameter_its_row_does_not_hold_is_refused_before_anything_is_sent(
        method: Method, params: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        request_line(1, method, **params)


def test_a_request_id_is_an_int_or_a_string() -> None:
    with pytest.raises(TypeError):
        request_line(True, Method.STATUS)


def test_a_timeline_from_the_box_reaches_the_app_as_plain_text() -> None:
    """Subjects are process names any user on the box chose; `workroom why` prints them in a terminal."""
    from workroom.core.protocol import TimelineReply

    reply = TimelineReply.model_validate({
        "now": 100.0, "problem": "set aside\x1b[2J",
        "spans": [{"start": 0.0, "end": 60.0, "state": "busy\x07", "class": "cpu", "subject": "\x1b]0;PWN\x07<h1"}],
    })
    shown = reply.spans[0].subject + reply.spans[0].state + (reply.problem or "")
    assert "PWN" in shown and "<h1" in shown
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in shown), shown


def test_every_host_supplied_text_is_cleaned_and_capped_at_parse_time() -> None:
    """An agent's error messages, exclusion names and notes, version strings and prompt names are plain
    text of bounded length the moment they are parsed (a compromised agent printed them as they came)."""
    import json as _json

    from workroom.core.protocol import MAX_MESSAGE_CHARS, MAX_NAME_CHARS, ErrorReply, Hello, PromptEvent, parse_line

    evil = "\x1b]0;PWN\x07\x1b[2J\u202e" * 300
    err = parse_line(_json.dumps({"id": 1, "error": {"code": "failed" + evil, "message": evil}}).encode())
    assert isinstance(err, ErrorReply)
    user = err.to_user_error()
    assert len(user.message) <= MAX_MESSAGE_CHARS and "\x1b" not in user.message and "\u202e" not in user.message
    hello = parse_line(_json.dumps({"hello": "wr-agent", "protocol": 1, "version": evil, "build": evil}).encode())
    assert isinstance(hello, Hello) and len(hello.version) <= MAX_NAME_CHARS and "\x07" not in hello.build
    reply = parse_line(_json.dumps({"id": 2, "result": {"names": ["x\x1b"] * 500, "problem": evil}}).encode())
    assert isinstance(reply, Reply)
    ex = reply.read(Method.EXCLUSIONS)
    assert isinstance(ex, UserExclusions)
    assert len(ex.names) <= 64 and all("\x1b" not in n and len(n) <= 200 for n in ex.names)
    assert ex.problem is not None and "\x1b" not in ex.problem
    prompt = parse_line(_json.dumps({"event": "awake_ceiling_prompt", "workroom": evil, "awake_seconds": 1,
                                     "prompt_deadline": 2.0}).encode())
    assert isinstance(prompt, PromptEvent) and len(prompt.workroom) <= MAX_NAME_CHARS
