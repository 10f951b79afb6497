"""The wire protocol's messages as models, a line parser, and request builders (docs/protocol.md).

Agent messages may carry fields this app does not know (a newer agent): they are ignored. A
missing or wrongly typed known field is an error, as is anything that is not one JSON object per
line of at most 64 KiB. Every failure is a `ProtocolError`; nothing else escapes `parse_line`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from workroom.core.ceiling import SETTINGS_BY_NAME, CeilingSettings
from workroom.core.display_text import plain
from workroom.core.errors import UserError

PROTOCOL_VERSION = 1
"""The protocol this app speaks (the one place it is written on this side; the agent's is wr_agent.PROTOCOL);
an agent reporting another in its hello is refused."""
MAX_LINE_BYTES = 65536
"""Longest line either side accepts, without its newline."""
AGENT_HELLO = "wr-agent"
"""What the agent's hello says it is."""
MAX_NAME_CHARS = 100
"""A workroom name, version or build hash from the host, cleaned and cut to this at parse time."""
MAX_MESSAGE_CHARS = 500
"""An error message from the host, likewise."""

RequestId = int | str
_M = TypeVar("_M", bound=BaseModel)

__all__ = [
    "AGENT_HELLO",
    "MAX_LINE_BYTES",
    "METHOD_RESULTS",
    "PROTOCOL_VERSION",
    "AgentInfo",
    "AgentMessage",
    "BusyReason",
    "BusySpan",
    "ErrorBody",
    "ErrorCode",
    "ErrorReply",
    "GapInfo",
    "Hello",
    "KeepAwakeInfo",
    "Method",
    "PromptEvent",
    "ProtocolError",
    "Reply",
    "RequestId",
    "Status",
    "StatusEvent",
    "TimelineReply",
    "TimelineSpan",
    "UserExclusions",
    "Verdict",
    "exclusions_request",
    "handoff_request",
    "keep_request",
    "let_sleep_request",
    "parse_line",
    "ping_request",
    "request_line",
    "settings_request",
    "status_request",
    "subscribe_request",
    "timeline_request",
]


class ProtocolError(UserError, ValueError):
    """The agent said something this app cannot understand. `code` says what kind of wrong."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(
            "Agent spoke an unknown language",
            message,
            "Reconnect; if this repeats, the agent on that host may be from a different app version.",
        )
        self.code = code
        self.retryable = code != "protocol"  # an agent of another protocol stays so until one side is updated


class Verdict(StrEnum):
    BUSY = "BUSY"
    IDLE = "IDLE"


class ErrorCode(StrEnum):
    """Error codes the agent may reply with. Unknown codes are kept as plain strings."""

    INVALID = "invalid"
    UNSUPPORTED = "unsupported"
    OUT_OF_RANGE = "out_of_range"
    TOO_LARGE = "too_large"
    FAILED = "failed"
    FORBIDDEN = "forbidden"


class Method(StrEnum):
    """The protocol's methods (docs/protocol.md). Adding one: a member here, its result model in
    `METHOD_RESULTS`, a request builder and an `AgentClient` call; the agent's row is wr_agent.server.METHODS.
    tests/integration/test_protocol_contract.py calls every member against the real agent."""

    STATUS = "status"
    SUBSCRIBE = "subscribe"
    SETTINGS = "settings"
    KEEP = "keep"
    LET_SLEEP = "let_sleep"
    PING = "ping"
    HANDOFF = "handoff"
    TIMELINE = "timeline"
    EXCLUSIONS = "exclusions"


class _AgentModel(BaseModel):
    """Agent messages: types checked strictly, unknown fields tolerated, no NaN or infinities."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True, allow_inf_nan=False)


class Hello(_AgentModel):
    hello: Literal["wr-agent"]  # AGENT_HELLO
    protocol: int
    version: str
    build: str

    @field_validator("version", "build")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain(value, MAX_NAME_CHARS)

    @property
    def speaks_our_protocol(self) -> bool:
        return self.protocol == PROTOCOL_VERSION


class KeepAwakeInfo(_AgentModel):
    """The agent's heartbeat, as it reports it."""

    last_sent: float | None = None
    error: str | None = None
    target: str | None = None
    interval_seconds: float = Field(gt=0)
    enabled: bool

    @field_validator("error", "target")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        return None if value is None else plain(value)


class GapInfo(_AgentModel):
    """The agent's last tick gap (its box was frozen or suspended), in the agent's monotonic clock."""

    at: float
    seconds: float
    busy_before: bool


class BusySpan(_AgentModel):
    """The agent's last busy span that ended while it was published BUSY (docs/protocol.md)."""

    ended: float
    """Agent monotonic time the span ended (the tick the verdict turned IDLE)."""
    seconds: float = Field(ge=0)
    """From its first BUSY vote to its last (the hold after work not counted); 0: it was only held."""
    reason_class: str = Field(alias="class")
    """The class of the reason that voted BUSY longest ("cpu", "disk", …); empty when only held."""
    subject: str
    """The process that reason named most (its comm), or empty."""
    slept: bool
    """The box was suspended (a tick gap) during the span."""

    @field_validator("reason_class", "subject")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain(value)  # a process name any user on the box chose


class AgentInfo(_AgentModel):
    version: str
    protocol: int
    build: str

    @field_validator("version", "build")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain(value, MAX_NAME_CHARS)


MAX_REASONS = 16
"""More busy reasons than any agent sends (it caps at 8 and a "+N more"); the rest are dropped."""
MAX_DETAIL_DEPTH = 3
"""How deep a reason's `detail` may nest (a hold names the reason it holds: two levels); deeper is refused."""


def _plain_detail(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DETAIL_DEPTH:
        raise ValueError("a busy reason's detail is nested too deeply")
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, dict):
        return {plain(str(k)): _plain_detail(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_detail(v, depth + 1) for v in value]
    return value


class BusyReason(_AgentModel):
    """One busy reason as data, beside its text in `Status.busy_reasons` (docs/protocol.md, "Busy reasons").

    `detail` holds the class's own facts (a TCP wait's `peer`, `port`, `since`; a hold's `after`, itself a
    reason); `core.busy_reasons` reads them. Strings anywhere in it are made plain, as the subject is.
    """

    model_config = ConfigDict(populate_by_name=True)

    reason_class: str = Field(alias="class")
    subject: str = ""
    pid: int | None = None
    detail: dict[str, Any] = Field(default_factory=dict)

    @field_validator("reason_class", "subject")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain(value)

    @field_validator("detail")
    @classmethod
    def _plain_detail(cls, value: dict[str, Any]) -> dict[str, Any]:
        cleaned = _plain_detail(value)
        assert isinstance(cleaned, dict)
        return cleaned


class Status(_AgentModel):
    """The status object. Fields an older agent may lack have defaults; the rest are required."""

    verdict: Verdict = Field(strict=False)
    classifier_verdict: Verdict = Field(strict=False)
    busy_reasons: tuple[str, ...] = Field(strict=False)
    structured_reasons: tuple[BusyReason, ...] = Field(default=(), strict=False)
    """The same reasons as data, in the same order; empty from an agent that sends only the text."""
    stalled: bool
    monotonic: float
    awake_seconds: float = Field(ge=0)
    ceiling_seconds: float
    prompt_timeout_seconds: float
    ask_at_ceiling: bool
    awake_ceiling_exceeded: bool
    prompt_pending: bool
    prompt_deadline: float | None = None
    suppressed: bool
    let_sleep: bool = False
    """Suppressed by the user's "Let it sleep" (not by a prompt that ran out); False from an older agent."""
    asserting: bool | None = None
    """None from an agent that does not report it."""
    keep_awake: KeepAwakeInfo | None = None
    """None from an agent too old to keep a box awake."""
    settings_error: str | None = None
    workroom: str
    agent: AgentInfo
    sampler: str = "proc"
    last_gap: GapInfo | None = None
    """None from an agent that never slept (or is too old to say)."""
    last_busy_span: BusySpan | None = None
    """None until a busy span ended (or from an agent too old to say)."""
    _settings_values: dict[str, object] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_settings_values(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Status:
        status: Status = handler(data)
        if isinstance(data, dict):
            status._settings_values = {k: data[k] for k in SETTINGS_BY_NAME if k in data}
        elif isinstance(data, Status):
            status._settings_values = dict(data._settings_values)
        return status

    @property
    def settings_values(self) -> dict[str, object]:
        """The ceiling settings this agent reports, by SETTING_FIELDS name (a field it predates is absent)."""
        return dict(self._settings_values)

    @field_validator("busy_reasons")
    @classmethod
    def _plain_reasons(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(plain(r) for r in value[:MAX_REASONS])

    @field_validator("structured_reasons", mode="before")
    @classmethod
    def _few_reasons(cls, value: Any) -> Any:
        return value[:MAX_REASONS] if isinstance(value, list | tuple) else value

    @field_validator("settings_error", "sampler")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        return None if value is None else plain(value)

    @field_validator("workroom")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return plain(value, MAX_NAME_CHARS)

    @property
    def busy(self) -> bool:
        return self.verdict is Verdict.BUSY


class StatusEvent(_AgentModel):
    event: Literal["status"]
    status: Status


class PromptEvent(_AgentModel):
    event: Literal["awake_ceiling_prompt"]
    workroom: str
    """What the agent calls itself: cleaned and cut, and never a card's or notification's title (those use
    the app's own name for the host, so a host cannot title its prompt as another host's)."""
    awake_seconds: float
    prompt_deadline: float

    @field_validator("workroom")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain(value, MAX_NAME_CHARS)


class Reply(_AgentModel):
    """A successful reply. `result` depends on the method; read it with the typed accessors."""

    id: RequestId
    result: dict[str, Any]

    def read(self, method: Method) -> BaseModel:
        """The result as the model `method`'s replies carry (METHOD_RESULTS), or ProtocolError."""
        return _validate(METHOD_RESULTS[method], self.result, f"{method.value} result")

    def status(self) -> Status:
        """The result as a status object (status, subscribe, settings, keep)."""
        return _validate(Status, self.result, "status result")

    def ping_monotonic(self) -> float:
        """The agent's CLOCK_MONOTONIC from a ping reply."""
        return _validate(PingResult, self.result, "ping result").monotonic

    def timeline(self) -> TimelineReply:
        return _validate(TimelineReply, self.result, "timeline result")

    def exclusions(self) -> UserExclusions:
        return _validate(UserExclusions, self.result, "exclusions result")

    def accepted(self) -> bool:
        """Whether a hand-off was accepted."""
        return _validate(HandoffResult, self.result, "handoff result").accepted


class TimelineSpan(_AgentModel):
    """One span of the agent's why-awake record: Unix seconds, the published state, the reason class."""

    start: float = Field(strict=False)
    end: float = Field(strict=False)
    state: str
    """busy, held, ceiling, idle or asleep; an unknown state (a newer agent) is shown as unknown."""
    reason_class: str = Field(alias="class")
    subject: str
    peer: str | None = None
    """A network wait's peer address (class tcp; absent from older agents and from other classes)."""
    port: int | None = Field(default=None, ge=0, le=65535)
    """The peer's port, for a connection this end opened."""
    local_port: int | None = Field(default=None, ge=0, le=65535)
    """Our port, for a connection that came in (its client's port is new on every connection, so not kept)."""

    @field_validator("state", "reason_class", "subject")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain(value)  # a process name any user on the box chose: never a terminal escape here

    @field_validator("peer")
    @classmethod
    def _plain_peer(cls, value: str | None) -> str | None:
        return None if value is None else plain(value)


class TimelineReply(_AgentModel):
    now: float = Field(strict=False)
    """The agent's wall clock when it answered (Unix seconds)."""
    spans: tuple[TimelineSpan, ...] = Field(strict=False)
    more_since: float | None = Field(default=None, strict=False)
    """Set when the reply was cut to fit a line: ask again with `since` = this."""
    keep_seconds: float = Field(default=7 * 24 * 3600.0, strict=False)
    problem: str | None = None
    """Why an earlier record was set aside (a corrupt file), in words."""

    @field_validator("problem")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        return None if value is None else plain(value)


MAX_EXCLUSIONS = 64
"""More "never work" entries than any agent keeps; the rest are dropped."""


class UserExclusions(_AgentModel):
    """Process names the user marked "never work" on this host, as the agent holds them."""

    names: tuple[str, ...] = Field(strict=False)
    problem: str | None = None

    @field_validator("names")
    @classmethod
    def _plain_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(plain(n) for n in value[:MAX_EXCLUSIONS])

    @field_validator("problem")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        return None if value is None else plain(value, MAX_MESSAGE_CHARS)


class PingResult(_AgentModel):
    monotonic: float


class HandoffResult(_AgentModel):
    accepted: bool


METHOD_RESULTS: Mapping[Method, type[_AgentModel]] = MappingProxyType({
    Method.STATUS: Status,
    Method.SUBSCRIBE: Status,
    Method.SETTINGS: Status,
    Method.KEEP: Status,
    Method.LET_SLEEP: Status,
    Method.PING: PingResult,
    Method.HANDOFF: HandoffResult,
    Method.TIMELINE: TimelineReply,
    Method.EXCLUSIONS: UserExclusions,
})
"""What each method's reply carries: the registry of the app's side (every `Method` has a row)."""


class ErrorBody(_AgentModel):
    code: str
    message: str

    @field_validator("code")
    @classmethod
    def _plain_code(cls, value: str) -> str:
        return plain(value, MAX_NAME_CHARS)

    @field_validator("message")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain(value, MAX_MESSAGE_CHARS)


class ErrorReply(_AgentModel):
    """The agent refused a request (or could not parse it: then `id` is None)."""

    id: RequestId | None
    error: ErrorBody

    def to_user_error(self) -> UserError:
        hints = {
            ErrorCode.OUT_OF_RANGE: "Change the value to one within the bounds named above.",
            ErrorCode.FORBIDDEN: "The agent runs as another user; connect as the user that owns it.",
            ErrorCode.UNSUPPORTED: "The agent on that host is older than this app; reconnect to update it.",
        }
        hint = hints.get(ErrorCode(self.error.code), "") if self.error.code in set(ErrorCode) else ""
        return UserError("The agent refused the request", self.error.message, hint)


AgentMessage = Hello | StatusEvent | PromptEvent | Reply | ErrorReply

_EVENTS: dict[str, type[StatusEvent] | type[PromptEvent]] = {
    "status": StatusEvent,
    "awake_ceiling_prompt": PromptEvent,
}


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:3]:
        where = ".".join(str(p) for p in item["loc"]) or "message"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def _validate(model: type[_M], data: object, what: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        detail = _describe(error)
        raise ProtocolError("invalid", f"The agent sent a {what} with bad fields ({detail}).") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as error:
        raise ProtocolError("invalid", f"The agent sent a {what} that could not be read ({error}).") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def parse_line(line: bytes | str) -> AgentMessage:
    """One line from the agent -> its message, or `ProtocolError` (and nothing else)."""
    if isinstance(line, str):
        try:
            raw = line.encode("utf-8")
        except UnicodeEncodeError:
            raise ProtocolError("not_utf8", "The agent sent text that is not valid UTF-8.") from None
    elif isinstance(line, bytes | bytearray | memoryview):
        raw = bytes(line)
    else:
        raise ProtocolError("invalid", f"A protocol line must be bytes or text, not {type(line).__name__}.")
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if len(raw) > MAX_LINE_BYTES:
        raise ProtocolError(
            "too_large", f"The agent sent a line of {len(raw)} bytes; the limit is {MAX_LINE_BYTES} bytes."
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("not_utf8", "The agent sent bytes that are not valid UTF-8.") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ProtocolError("not_json", "The agent sent JSON nested too deeply to read.") from None
    except ValueError as error:
        raise ProtocolError("not_json", f"The agent sent a line that is not JSON ({error}).") from None
    if not isinstance(data, dict):
        raise ProtocolError("not_object", f"The agent sent JSON {type(data).__name__}, not an object.")
    return _classify(data)


def _classify(data: dict[str, Any]) -> AgentMessage:
    if "hello" in data:
        return _validate(Hello, data, "hello")
    if "event" in data:
        name = data["event"]
        event_model = _EVENTS.get(name) if isinstance(name, str) else None
        if event_model is None:
            raise ProtocolError("unknown_event", f"The agent sent an event this app does not know: {name!r}.")
        return _validate(event_model, data, f"{name} event")
    if "id" in data and "result" in data:
        return _validate(Reply, data, "reply")
    if "id" in data and "error" in data:
        return _validate(ErrorReply, data, "error reply")
    keys = ", ".join(sorted(data)[:5]) or "none"
    raise ProtocolError("unknown_shape", f"The agent sent a message of unknown shape (keys: {keys}).")


# Requests -----------------------------------------------------------------------------------

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def _check_id(request_id: RequestId) -> RequestId:
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        raise TypeError(f"a request id is an int or a string, not {type(request_id).__name__}")
    return request_id


def request_line(request_id: RequestId, method: Method, **params: Any) -> bytes:
    """One request line: any method, with its parameters (the builders below give each method's own)."""
    body = {"id": _check_id(request_id), "method": method.value, **params}
    text = json.dumps(body, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


def status_request(request_id: RequestId) -> bytes:
    return request_line(request_id, Method.STATUS)


def subscribe_request(request_id: RequestId) -> bytes:
    return request_line(request_id, Method.SUBSCRIBE)


def keep_request(request_id: RequestId) -> bytes:
    """Answer a ceiling prompt: "keep awake" (the agent restarts its ceiling)."""
    return request_line(request_id, Method.KEEP)


def let_sleep_request(request_id: RequestId) -> bytes:
    """Answer a ceiling prompt: "let it sleep" (the agent stops keeping the box awake now)."""
    return request_line(request_id, Method.LET_SLEEP)


def ping_request(request_id: RequestId) -> bytes:
    return request_line(request_id, Method.PING)


def settings_request(request_id: RequestId, settings: CeilingSettings,
                     reported: dict[str, object] | None = None) -> bytes:
    """Hand the agent this computer's ceiling settings (already shaped for the host's provider). `reported`:
    what its status holds, so a field it predates is not sent (`CeilingSettings.as_request_params`)."""
    return request_line(request_id, Method.SETTINGS, **settings.as_request_params(reported))


def handoff_request(request_id: RequestId, bundle: str, sha256: str) -> bytes:
    """Ask the running agent to re-execute into `bundle`, whose hash must be `sha256` (lowercase hex)."""
    if not bundle or "\n" in bundle or "\x00" in bundle:
        raise ValueError(f"a bundle path must be a non-empty single line, got {bundle!r}")
    if not _SHA256_HEX.fullmatch(sha256):
        raise ValueError(f"sha256 must be 64 lowercase hex digits, got {sha256!r}")
    return request_line(request_id, Method.HANDOFF, bundle=bundle, sha256=sha256)


def timeline_request(request_id: RequestId, since: float | None = None) -> bytes:
    """The why-awake record from `since` (Unix seconds; None: all the agent keeps)."""
    if since is None:
        return request_line(request_id, Method.TIMELINE)
    return request_line(request_id, Method.TIMELINE, since=float(since))


def exclusions_request(request_id: RequestId, names: list[str] | None = None) -> bytes:
    """Read (None) or replace the host's "never work" process names."""
    if names is None:
        return request_line(request_id, Method.EXCLUSIONS)
    return request_line(request_id, Method.EXCLUSIONS, names=list(names))
