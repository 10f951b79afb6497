"""Asking a host's agent through its session (`HostSession.call`): one path for every protocol method, from
either face (core.protocol `METHODS` says what each answers with)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel

from workroom.core.connection import ConnectionState
from workroom.core.errors import UserError
from workroom.core.prompt_answers import Answer, AnswerFace, SentAnswer
from workroom.core.protocol import Method, Status
from workroom.remote.agent_client import REQUEST_TIMEOUT_SECONDS
from workroom.remote.agent_link import AgentLink

ANSWERS: Mapping[Method, Answer] = {Method.KEEP: Answer.KEEP, Method.LET_SLEEP: Answer.LET_SLEEP}
"""The methods that answer a ceiling prompt (recorded as the session's `last_answer`)."""

NOT_CONNECTED_WORDS: Mapping[Method, str] = {
    Method.KEEP: "it cannot be kept awake",
    Method.LET_SLEEP: "its agent cannot let it sleep",
    Method.TIMELINE: "its agent cannot say what kept it awake",
    Method.EXCLUSIONS: "its agent cannot change what counts as work",
}
"""What a method asked of a host that is not connected cannot do, in the user's words ("box1 is not connected,
so ..."); a method without a row: "its agent cannot be asked"."""


class AgentCaller:
    """`call(method, **params)` for one session: its link when up; Keep on a box the app let go of connects
    first (without waking it: its agent must hear the answer); a prompt's answer is recorded with who gave it,
    and a status answer is taken as any pushed status is."""

    def __init__(self, name: str, link: Callable[[], AgentLink | None], state: Callable[[], ConnectionState],
                 reconnect: Callable[[], Awaitable[object]], answered: Callable[[SentAnswer], None],
                 on_status: Callable[[Status], None]) -> None:
        self._name = name
        self._link = link
        self._state = state
        self._reconnect = reconnect
        self._answered = answered
        self._on_status = on_status

    async def __call__(self, method: Method, /, *, timeout: float = REQUEST_TIMEOUT_SECONDS,
                       face: AnswerFace = AnswerFace.COMMAND_LINE, **params: Any) -> BaseModel:
        """`face`: who answers, for a method that answers a ceiling prompt."""
        if method is Method.KEEP and self._state() is ConnectionState.RELEASED:
            await self._reconnect()
        link = self._link()
        if link is None or link.client.closed:
            cannot = NOT_CONNECTED_WORDS.get(method, "its agent cannot be asked")
            raise UserError("Not connected", f"{self._name} is not connected, so {cannot}.",
                            "Connect to the host and try again.")
        result = await link.client.call(method, timeout=timeout, **params)
        answer = ANSWERS.get(method)
        if answer is not None:
            self._answered(SentAnswer(answer, face, time.time()))
        if isinstance(result, Status):
            self._on_status(result)  # a prompt answered (keep, let_sleep) is cleared with it
        return result
