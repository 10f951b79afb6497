"""Talks the wire protocol (docs/protocol.md) to one agent over any line transport.

The transport is whatever carries bytes to the agent: the local Unix socket, or a `relay` running over
an SSH channel. It hands us complete lines (`feed_line`) and its end (`feed_eof`) on the event loop, and
gives us one coroutine to send bytes. Replies are matched to requests by id; events go to a callback.
When the stream ends every pending request fails at once with `AgentGone` (a broken stream fails
visibly, it never leaves a caller waiting: docs/architecture.md, a dead box must be noticed).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any, cast

from pydantic import BaseModel

from workroom.core.ceiling import CeilingSettings
from workroom.core.errors import UserError
from workroom.core.protocol import (
    MAX_PAGES,
    PROTOCOL_VERSION,
    AgentCall,
    ErrorReply,
    Hello,
    Method,
    PagedReply,
    PromptEvent,
    ProtocolError,
    Reply,
    Status,
    StatusEvent,
    parse_line,
    request_line,
    request_params,
)

Send = Callable[[bytes], Awaitable[None]]
EventHandler = Callable[[StatusEvent | PromptEvent], None]

HELLO_TIMEOUT_SECONDS = 15.0
REQUEST_TIMEOUT_SECONDS = 15.0
MAX_LINES_BEFORE_HELLO = 20
MAX_HELD_EVENTS = 64
"""Events an agent that has not yet proven who it is may push before they are dropped, oldest first."""


class AgentGone(UserError):
    """The stream to the agent ended (host asleep, connection cut, agent died)."""

    def __init__(self, why: str) -> None:
        super().__init__(
            "Lost the agent",
            f"The connection to the workroom's agent ended: {why}.",
            "The app reconnects on its own when the host is reachable again.",
        )


class AgentRefused(UserError):
    """The agent answered a request with an error."""

    def __init__(self, reply: ErrorReply) -> None:
        err = reply.to_user_error()
        super().__init__(err.title, err.message, err.hint)
        self.code = reply.error.code


class RequestTimedOut(TimeoutError):
    """No reply to a request (or no hello) in time; says which and how long it waited (a bare TimeoutError
    would reach the user as "ended: .")."""

    def __init__(self, what: str, seconds: float) -> None:
        words = (f"the agent did not say hello within {seconds:g} s" if what == "hello"
                 else f"the agent did not answer a {what} request within {seconds:g} s")
        super().__init__(words)
        self.what, self.seconds = what, seconds


def _reply_id(line: bytes) -> int | str | None:
    """The id of a line that failed to parse as a message, if it has a usable one (stdlib json reads NaN)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    rid = data.get("id") if isinstance(data, dict) else None
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


class AgentClient:
    """One agent connection: hello, requests with ids, pushed events.

    `held`: its events are held, not handed on, until `trust()` (the agent has proven who it is: nothing a peer
    that could not prove it pushes ever reaches the session; sessions/agent_reach.py)."""

    def __init__(self, send: Send, on_event: EventHandler | None = None, *, held: bool = False) -> None:
        self._send = send
        self._on_event = on_event
        self._held: list[StatusEvent | PromptEvent] | None = [] if held else None
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[Reply]] = {}
        self._hello: asyncio.Future[Hello] = asyncio.get_running_loop().create_future()
        # A link dropped before anyone asked for its hello is not an unhandled error.
        self._hello.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._closed: AgentGone | None = None
        self.protocol_errors = 0

    # -- transport side ------------------------------------------------------------------------

    def feed_line(self, line: bytes) -> None:
        """One complete line from the agent (called on the event loop)."""
        try:
            message = parse_line(line)
        except ProtocolError as error:
            self.protocol_errors += 1
            # A login script that prints something (a ~/.bashrc echo) comes before the hello: skip a few
            # such lines; past that, the other end is not our agent.
            if not self._hello.done() and self.protocol_errors > MAX_LINES_BEFORE_HELLO:
                self._hello.set_exception(error)
            # A reply we cannot accept (NaN in it, a wrong shape) fails its request now, not after a timeout.
            rid = _reply_id(line)
            future = self._pending.pop(rid, None) if rid is not None else None
            if future is not None and not future.done():
                future.set_exception(error)
            return
        if isinstance(message, Hello):
            if not self._hello.done():
                self._hello.set_result(message)
        elif isinstance(message, StatusEvent | PromptEvent):
            if self._held is not None:
                self._held = [*self._held[1 - MAX_HELD_EVENTS:], message]
            elif self._on_event is not None:
                self._on_event(message)
        else:
            future = self._pending.pop(message.id, None) if message.id is not None else None
            if future is None or future.done():
                return
            if isinstance(message, ErrorReply):
                future.set_exception(AgentRefused(message))
            else:
                future.set_result(message)

    def feed_eof(self, why: str = "the stream closed") -> None:
        """The transport ended; fail everything that waits (called on the event loop)."""
        if self._closed is not None:
            return
        self._closed = AgentGone(why)
        if not self._hello.done():
            self._hello.set_exception(self._closed)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(self._closed)
        self._pending.clear()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def trust(self) -> None:
        """The agent has proven who it is: hand on the events held so far, in order, and every one after."""
        held, self._held = self._held or [], None
        if self._on_event is not None:
            for event in held:
                self._on_event(event)

    # -- requests ------------------------------------------------------------------------------

    async def hello(self, timeout: float | None = None) -> Hello:
        """The agent's greeting; `RequestTimedOut` past `timeout` (default `HELLO_TIMEOUT_SECONDS`)."""
        seconds = HELLO_TIMEOUT_SECONDS if timeout is None else timeout
        try:
            hello = await asyncio.wait_for(asyncio.shield(self._hello), seconds)
        except TimeoutError:
            raise RequestTimedOut("hello", seconds) from None
        if not hello.speaks_our_protocol:
            raise ProtocolError(
                "protocol", f"The agent speaks protocol {hello.protocol}; this app speaks protocol {PROTOCOL_VERSION}."
            )
        return hello

    @property
    def call(self) -> AgentCall:
        """Ask the agent: `call(method, timeout=..., **params)` answers with the model `METHODS[method].result`
        (a paged reply read to its end). The parameters are checked before anything is sent (ValueError);
        the agent's refusal is `AgentRefused`, no answer within `timeout` seconds `RequestTimedOut`."""
        return cast(AgentCall, self._call)

    async def _call(self, method: Method, /, *, timeout: float = REQUEST_TIMEOUT_SECONDS,
                    **params: Any) -> BaseModel:
        sent = request_params(method, params)
        result = (await self._request(method, sent, timeout)).read(method)
        pages = 1
        while isinstance(result, PagedReply) and pages < MAX_PAGES and (rest := result.rest(sent)) is not None:
            sent = {**sent, **rest}
            page = (await self._request(method, sent, timeout)).read(method)
            assert isinstance(page, PagedReply)  # the same row's model as the first page
            result, pages = result.joined(page), pages + 1
        return result.whole() if isinstance(result, PagedReply) else result

    async def _request(self, method: Method, params: dict[str, Any], timeout: float) -> Reply:
        if self._closed is not None:
            raise self._closed
        request_id = next(self._ids)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Reply] = loop.create_future()
        self._pending[request_id] = future
        deadline = loop.time() + timeout
        try:
            try:
                # The send counts against the same time limit: a send stuck behind a busy executor or a full
                # channel must not hold the request (and the session waiting on it) for ever.
                await asyncio.wait_for(self._send(request_line(request_id, method, **params)), timeout)
                return await asyncio.wait_for(future, max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise RequestTimedOut(method.value, timeout) from None
        finally:
            self._pending.pop(request_id, None)
            # The link closed while the send waited (or the caller gave up): the failure this future holds has
            # been raised to the caller another way, and is not an unhandled error on top.
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()

    # The connect path's own calls (one line each over `call`).

    async def subscribe(self, timeout: float = REQUEST_TIMEOUT_SECONDS, *, challenge: str | None = None) -> Status:
        """Subscribe; with `challenge`, the answer carries the agent's proof (`Status.proof`)."""
        return await self.call(Method.SUBSCRIBE, timeout=timeout, challenge=challenge)

    async def settings(self, settings: CeilingSettings, timeout: float = REQUEST_TIMEOUT_SECONDS,
                       reported: dict[str, object] | None = None) -> Status:
        """Hand the agent these settings; `reported` (its last status's `settings_values`) leaves out a field
        it predates."""
        return await self.call(Method.SETTINGS, timeout=timeout, **settings.as_request_params(reported))

    async def ping(self, timeout: float) -> float:
        """Liveness: the agent's monotonic clock, or `TimeoutError` when the peer is frozen."""
        return (await self.call(Method.PING, timeout=timeout)).monotonic
