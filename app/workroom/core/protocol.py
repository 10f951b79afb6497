"""The wire protocol's messages as models, a line parser, the methods' registry and request lines
(docs/protocol.md).

Agent messages may carry fields this app does not know (a newer agent): they are ignored. A
missing or wrongly typed known field is an error, as is anything that is not one JSON object per
line of at most 64 KiB. Every failure is a `ProtocolError`; nothing else escapes `parse_line`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal, Protocol, Self, TypeVar, overload

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

from workroom.core.ceiling import SETTINGS_BY_NAME
from workroom.core.errors import UserError
from workroom.core.host_text import plain

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
    "MAX_PAGES",
    "METHODS",
    "PROTOCOL_VERSION",
    "AgentCall",
    "AgentInfo",
    "AgentMessage",
    "BusyReason",
    "BusySpan",
    "ErrorBody",
    "ErrorCode",
    "ErrorReply",
    "ExclusionsParams",
    "GapInfo",
    "HandoffParams",
    "HandoffResult",
    "Hello",
    "KeepAwakeInfo",
    "Method",
    "MethodRow",
    "NoParams",
    "PagedReply",
    "PingResult",
    "PromptEvent",
    "ProtocolError",
    "Reply",
    "RequestId",
    "SettingsParams",
    "Status",
    "StatusEvent",
    "TimelineParams",
    "TimelineReply",
    "TimelineSpan",
    "UserExclusions",
    "Verdict",
    "parse_line",
    "request_line",
    "request_params",
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
    """The protocol's methods by their wire names (docs/protocol.md): the one place a method's name is written
    on this side. Each has its row in `METHODS` (the model its reply is read as, its parameters); the agent's
    row is wr_agent.server.METHODS. tests/integration/test_protocol_contract.py calls every member through
    `AgentClient.call` against the real agent."""

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
    sent: int | None = Field(default=None, ge=0)
    """Heartbeats sent since the agent started (None: an agent that does not report them)."""

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
    checking_until: float | None = None
    """A fresh agent's first look at the box ends then (its monotonic clock; docs/protocol.md): an IDLE before it is
    not yet a judgement. The same in every status of one agent process (its end pushes nothing)."""
    monotonic: float
    awake_seconds: float = Field(ge=0)
    """Counted toward the awake ceiling: from when work began, restarted by `keep` (core.box_times)."""
    busy_seconds: float | None = Field(default=None, ge=0)
    """How long this stretch of work has gone on, less the time the box slept (not restarted by `keep`); None
    while IDLE, or from an agent too old to say."""
    hold_until: float | None = None
    """Agent monotonic time the hold after work ends if nothing else votes BUSY; None while IDLE."""
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
    proof: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """Only in the answer to a `subscribe` that carried a challenge: the agent's proof of who it is (docs/protocol.md,
    "Who answers"). The app checks it and drops it before the status goes anywhere."""
    _settings_values: dict[str, object] = PrivateAttr(default_factory=dict)

    def checking(self, agent_now: float | None = None) -> bool:
        """Whether the agent is still on its first look at `agent_now` (its clock; default: when it sent this)."""
        now = self.monotonic if agent_now is None else agent_now
        return self.checking_until is not None and now < self.checking_until

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
    """A successful reply. `result` depends on the method: `read` it as the method's row says."""

    id: RequestId
    result: dict[str, Any]

    def read(self, method: Method) -> BaseModel:
        """The result as the model `method`'s replies carry (`METHODS[method].result`), or ProtocolError."""
        return _validate(METHODS[method].result, self.result, f"{method.value} result")


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


class PagedReply(_AgentModel):
    """A reply that may come in pages, each one protocol line: `AgentClient.call` asks for the rest and hands
    back the whole (at most `MAX_PAGES` pages)."""

    def rest(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The parameters that ask for what follows this page (it was asked with `params`), or None: whole."""
        raise NotImplementedError

    def joined(self, page: Self) -> Self:
        """This reply with the `page` that follows it."""
        raise NotImplementedError

    def whole(self) -> Self:
        """This reply, said to be whole."""
        raise NotImplementedError


MAX_PAGES = 16
"""Most pages one call reads (a full why-awake record is a few)."""


class TimelineReply(PagedReply):
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

    def rest(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        since = params.get("since")
        if self.more_since is None or (since is not None and self.more_since <= since):
            return None  # whole, or a cursor that does not move on (never ask the same page for ever)
        return {"since": self.more_since}

    def joined(self, page: Self) -> Self:
        """The spans so far, then the page's newer ones (a span on both pages once); the page's clock and note."""
        spans = list(self.spans)
        spans.extend(s for s in page.spans if not spans or s.start > spans[-1].start)
        return page.model_copy(update={"spans": tuple(spans)})

    def whole(self) -> Self:
        return self.model_copy(update={"more_since": None})


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


class _Params(BaseModel):
    """A request's parameters, checked before they are sent: a wrong one is this app's mistake (ValueError),
    never something to put on the wire. A parameter left None is not sent."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class NoParams(_Params):
    """Most methods take no parameters."""


class SettingsParams(_Params):
    """Ceiling settings by their SETTING_FIELDS names (`CeilingSettings.as_request_params`). Their bounds are
    the agent's to check (tests run agents with lower bounds); here only the names and the kinds of value."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        for name, value in dict(data).items():
            if name not in SETTINGS_BY_NAME:
                raise ValueError(f"{name!r} is not a setting")
            if not isinstance(value, bool | int | float) or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"{name} must be true, false or a finite number, not {value!r}")
        return data


class HandoffParams(_Params):
    bundle: str
    """The path of a bundle on the host: one line."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Its hash, 64 lowercase hex digits."""

    @field_validator("bundle")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if not value or "\n" in value or "\x00" in value:
            raise ValueError("a bundle path must be a non-empty single line")
        return value


class SubscribeParams(_Params):
    challenge: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """A fresh random challenge (64 hex digits) the agent answers with its proof (`Status.proof`)."""


class TimelineParams(_Params):
    since: float | None = None
    """Unix seconds; None: all the agent keeps."""


class ExclusionsParams(_Params):
    """Read the names in force (nothing given), or change them: `add` and `remove` are applied by the agent to
    the list it holds then (so a change made meanwhile elsewhere is kept); `names` replaces the whole list (an
    older app's way; not with `add` or `remove`)."""

    names: list[str] | None = None
    add: list[str] | None = None
    remove: list[str] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        if self.names is not None and (self.add is not None or self.remove is not None):
            raise ValueError("names replaces the list: not with add or remove")
        return self


@dataclass(frozen=True)
class MethodRow:
    """What this app knows of one method: the model its reply is read as, and its parameters' model."""

    result: type[_AgentModel]
    params: type[_Params] = NoParams


METHODS: Mapping[Method, MethodRow] = MappingProxyType({
    Method.STATUS: MethodRow(Status),
    Method.SUBSCRIBE: MethodRow(Status, SubscribeParams),
    Method.SETTINGS: MethodRow(Status, SettingsParams),
    Method.KEEP: MethodRow(Status),
    Method.LET_SLEEP: MethodRow(Status),
    Method.PING: MethodRow(PingResult),
    Method.HANDOFF: MethodRow(HandoffResult, HandoffParams),
    Method.TIMELINE: MethodRow(TimelineReply, TimelineParams),
    Method.EXCLUSIONS: MethodRow(UserExclusions, ExclusionsParams),
})
"""The registry of the app's side, one row per `Method` (`AgentCall` says the same to the type checker)."""


class AgentCall(Protocol):
    """`call(method, **params)`: the one typed way to ask an agent (`AgentClient.call`, `HostSession.call`).
    It answers with the model `METHODS[method].result`; these overloads tell mypy which, per method, and
    tests/unit/core/test_core_protocol.py fails when they and `METHODS` disagree. `timeout`: seconds."""

    @overload
    def __call__(self, method: Literal[Method.STATUS, Method.SUBSCRIBE, Method.SETTINGS, Method.KEEP,
                                       Method.LET_SLEEP], /, *, timeout: float = ...,
                 **params: Any) -> Awaitable[Status]: ...

    @overload
    def __call__(self, method: Literal[Method.PING], /, *, timeout: float = ...,
                 **params: Any) -> Awaitable[PingResult]: ...

    @overload
    def __call__(self, method: Literal[Method.HANDOFF], /, *, timeout: float = ...,
                 **params: Any) -> Awaitable[HandoffResult]: ...

    @overload
    def __call__(self, method: Literal[Method.TIMELINE], /, *, timeout: float = ...,
                 **params: Any) -> Awaitable[TimelineReply]: ...

    @overload
    def __call__(self, method: Literal[Method.EXCLUSIONS], /, *, timeout: float = ...,
                 **params: Any) -> Awaitable[UserExclusions]: ...

    @overload
    def __call__(self, method: Method, /, *, timeout: float = ..., **params: Any) -> Awaitable[BaseModel]: ...

    def __call__(self, method: Method, /, *, timeout: float = ..., **params: Any) -> Awaitable[BaseModel]: ...


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


def _check_id(request_id: RequestId) -> RequestId:
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        raise TypeError(f"a request id is an int or a string, not {type(request_id).__name__}")
    return request_id


def request_params(method: Method, params: Mapping[str, Any]) -> dict[str, Any]:
    """`method`'s parameters checked against its row (`METHODS[method].params`), as they go on the wire; a
    wrong one is ValueError (this app's mistake: nothing is sent)."""
    try:
        return METHODS[method].params.model_validate(dict(params)).wire()
    except ValidationError as error:
        raise ValueError(f"bad parameters for {method.value}: {_describe(error)}") from None


def request_line(request_id: RequestId, method: Method, **params: Any) -> bytes:
    """One request line: `method` with its parameters, checked (`request_params`)."""
    body = {"id": _check_id(request_id), "method": method.value, **request_params(method, params)}
    text = json.dumps(body, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"
