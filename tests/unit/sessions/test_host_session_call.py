"""`HostSession.call`, the faces' one door to a host's agent: a status it is answered with is shown like any
other (the prompt it answers is gone), other answers come back as their row's model, and a host that is not
connected is said in the method's words. The agent is the real one, in this process (stand_in.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from unit.sessions.stand_in import InProcessAgent, ScriptedProvider, stand_in_context
from unit.sessions.test_host_session import until
from workroom.core.ceiling import CeilingSettings
from workroom.core.errors import UserError
from workroom.core.hosts import Host
from workroom.core.prompt_answers import Answer, AnswerFace
from workroom.core.protocol import Method, TimelineReply, UserExclusions
from workroom.core.traits import BOXD_TRAITS
from workroom.providers.base import BoxState
from workroom.sessions.host_session import HostSession
from wr_agent.signals import Signals

pytestmark = pytest.mark.unit

HOST = Host(name="box", provider="ssh", address="box.example")
ASK_AT_30_S = CeilingSettings(ceiling_seconds=30, prompt_timeout_seconds=600, ask_at_ceiling=True)


@pytest.fixture
def agent() -> Iterator[InProcessAgent]:
    running = InProcessAgent()
    yield running
    running.close()


def test_an_answer_through_call_is_shown_and_clears_the_prompt(tmp_path: Path, agent: InProcessAgent) -> None:
    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.AWAKE, agent=agent)
        session = HostSession(HOST, provider, ASK_AT_30_S)
        await session.connect(timeout=10)
        for _ in range(32):  # busy past the 30 s ceiling: the agent asks
            agent.tick(Signals(cpu=[("job", "5", 1.0)]))
        await until(lambda: session.prompt is not None)
        kept = await session.call(Method.KEEP, face=AnswerFace.NOTIFICATION)
        assert session.prompt is None and session.status == kept and not kept.prompt_pending
        assert session.last_answer is not None and session.last_answer.answer is Answer.KEEP
        assert session.last_answer.face is AnswerFace.NOTIFICATION  # whose answer it was, as the call says
        await session.call(Method.LET_SLEEP)
        assert session.last_answer.answer is Answer.LET_SLEEP
        assert session.last_answer.face is AnswerFace.COMMAND_LINE  # a bare call is the command line's
        await session.call(Method.STATUS)
        assert session.last_answer.answer is Answer.LET_SLEEP  # no answer to a prompt: nothing recorded
        never = await session.call(Method.EXCLUSIONS, names=["watch"])
        assert isinstance(never, UserExclusions) and never.names == ("watch",)
        assert (await session.call(Method.EXCLUSIONS)).names == ("watch",)
        record = await session.call(Method.TIMELINE, since=None)
        assert isinstance(record, TimelineReply) and record.more_since is None
        await session.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))


@pytest.mark.parametrize(("method", "words"), [
    (Method.KEEP, "box is not connected, so it cannot be kept awake."),
    (Method.LET_SLEEP, "box is not connected, so its agent cannot let it sleep."),
    (Method.STATUS, "box is not connected, so its agent cannot be asked."),
])
def test_a_host_not_connected_is_said_in_the_methods_words(tmp_path: Path, method: Method, words: str) -> None:
    async def scenario() -> UserError:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS)
        session = HostSession(HOST, provider, ASK_AT_30_S)
        try:
            with pytest.raises(UserError) as refused:
                await session.call(method)
            return refused.value
        finally:
            await session.close()

    error = asyncio.run(scenario())
    assert error.title == "Not connected" and error.message == words
