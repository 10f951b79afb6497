"""Clear failures from the agent client: a timeout (of a request or of the hello) says what timed out and
after how long, and a reply the app cannot accept (NaN) fails its request at once instead of after the
timeout."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from workroom.core.protocol import Method, ProtocolError
from workroom.remote.agent_client import AgentClient, RequestTimedOut

pytestmark = pytest.mark.unit

HELLO = b'{"hello": "wr-agent", "protocol": 1, "version": "0.1.0", "build": "' + b"0" * 64 + b'"}\n'


def test_a_request_that_times_out_says_which_and_after_how_long() -> None:
    async def main() -> str:
        async def send(_data: bytes) -> None:
            return None  # an agent that never answers

        client = AgentClient(send)
        client.feed_line(HELLO)
        await client.hello()
        with pytest.raises(RequestTimedOut) as e:
            await client.call(Method.STATUS, timeout=0.2)
        assert isinstance(e.value, TimeoutError)
        return str(e.value)

    assert asyncio.run(main()) == "the agent did not answer a status request within 0.2 s"


def test_no_hello_in_time_says_so_and_after_how_long() -> None:
    async def main() -> str:
        async def send(_data: bytes) -> None:
            return None

        client = AgentClient(send)  # an agent that never greets
        with pytest.raises(RequestTimedOut) as e:
            await client.hello(timeout=0.2)
        assert isinstance(e.value, TimeoutError)
        return str(e.value)

    assert asyncio.run(main()) == "the agent did not say hello within 0.2 s"


def test_a_reply_with_nan_fails_the_request_at_once() -> None:
    async def main() -> float:
        client: AgentClient

        async def send(data: bytes) -> None:
            rid = json.loads(data)["id"]
            reply = json.dumps({"id": rid, "result": {"monotonic": float("nan")}}) + "\n"  # NaN, as json writes it
            asyncio.get_running_loop().call_soon(client.feed_line, reply.encode())

        client = AgentClient(send)
        client.feed_line(HELLO)
        await client.hello()
        started = time.monotonic()
        with pytest.raises(ProtocolError):
            await client.ping(timeout=10)
        return time.monotonic() - started

    assert asyncio.run(main()) < 1.0


@pytest.mark.parametrize("exc", [EOFError(), TimeoutError(), OSError(), ConnectionResetError(104, "reset by peer")])
def test_a_broken_connection_is_said_without_a_type_name(exc: BaseException) -> None:
    """paramiko raises a bare EOFError when the host hangs up: the user reads words, not `EOFError`."""
    from workroom.core.exception_names import shows_exception_name
    from workroom.remote.ssh_connection import _plain_cause

    said = _plain_cause(exc)
    assert said and type(exc).__name__ not in said and not shows_exception_name(said), said


def test_a_send_that_never_completes_is_within_the_requests_time_limit() -> None:
    """A relay send stuck in an executor that other work filled (stuck polls did that) used to hold the
    request, and the session waiting on it, for ever: the send is inside the request's time limit."""
    async def scenario() -> float:
        async def stuck_send(data: bytes) -> None:
            await asyncio.Event().wait()

        client = AgentClient(stuck_send)
        started = time.monotonic()
        with pytest.raises(RequestTimedOut) as info:
            await asyncio.wait_for(client.call(Method.STATUS, timeout=0.3), 5)
        assert info.value.what == "status"
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 1.0


def test_events_wait_until_the_agent_has_proven_who_it_is() -> None:
    """A held client hands on nothing an agent pushes until `trust()`: then what it held, in order (at most the
    last MAX_HELD_EVENTS), and every event after."""
    from workroom.remote.agent_client import MAX_HELD_EVENTS

    async def scenario() -> None:
        seen: list[int] = []

        async def send(data: bytes) -> None:
            return None

        client = AgentClient(send, lambda event: seen.append(int(event.status.monotonic)), held=True)
        status = {"verdict": "IDLE", "classifier_verdict": "IDLE", "busy_reasons": [], "stalled": False,
                  "awake_seconds": 0.0, "ceiling_seconds": 60.0, "prompt_timeout_seconds": 60.0,
                  "ask_at_ceiling": False, "awake_ceiling_exceeded": False, "prompt_pending": False,
                  "suppressed": False, "workroom": "w", "agent": {"version": "0.1.0", "protocol": 1, "build": "b"}}
        for n in range(MAX_HELD_EVENTS + 10):
            client.feed_line(json.dumps({"event": "status", "status": {**status, "monotonic": n}}).encode())
        assert seen == []
        client.trust()
        assert seen == list(range(10, MAX_HELD_EVENTS + 10))
        client.feed_line(json.dumps({"event": "status", "status": {**status, "monotonic": 999}}).encode())
        assert seen[-1] == 999

    asyncio.run(scenario())


def test_a_link_closed_while_a_request_is_sent_leaves_no_unretrieved_failure() -> None:
    """The link closes (replaced, say) while a request's send still waits: the request fails as it always did,
    and the failure its reply's future was given is not reported again as "Future exception was never
    retrieved" (seen on stderr after a `workroom connect`)."""
    import gc

    async def main() -> list[str]:
        reported: list[str] = []
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reported.append(context["message"]))
        stuck = asyncio.Event()

        async def send(_data: bytes) -> None:
            await stuck.wait()  # a channel that never takes the line

        client = AgentClient(send)
        client.feed_line(HELLO)
        await client.hello()
        asking = asyncio.ensure_future(client.call(Method.STATUS, timeout=0.3))
        await asyncio.sleep(0.05)
        client.feed_eof("replaced")
        with pytest.raises(RequestTimedOut):
            await asking
        del asking
        gc.collect()
        await asyncio.sleep(0)
        return reported

    assert asyncio.run(main()) == []
