"""A shell on a host for one connect: the provider opens it off the loop; an unknown host key is asked about and
trusted only on a yes; a refusal that the same again cannot change ends the run (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host
from workroom.core.questions import HostKeyQuestion
from workroom.providers.base import Provider
from workroom.remote.host_keys import HostKeyChanged, HostKeyUnknown
from workroom.remote.host_shell import HostShell
from workroom.remote.ssh_errors import AuthFailed
from workroom.sessions.blocking_runner import BlockingRunner
from workroom.sessions.reconnect_rules import EndOfRun

Asker = Callable[[HostKeyQuestion], Awaitable[bool]]
"""Asks the user whether to trust a host key nobody has confirmed (True: trust it); None: nobody to ask."""
Say = Callable[[ConnectionState, str | None], None]
"""Says the session's state while it opens (the question's fingerprint with HOST_KEY_QUESTION)."""


async def open_shell(runner: BlockingRunner, provider: Provider, host: Host, ask: Asker | None, say: Say) -> HostShell:
    """A shell on `host`, or an `EndOfRun` saying why not (a refused key or secret, a changed or untrusted host
    key). A stored passphrase the key refused is forgotten so it is not tried again."""
    while True:
        try:
            return await runner.run_closing_on_cancel(provider.open_shell, host)
        except AuthFailed as refused:
            if refused.rejected_secret is not None:
                await runner.run(provider.forget_secret, refused.rejected_secret)
            raise EndOfRun.fatal(refused) from None
        except HostKeyChanged as refused:
            raise EndOfRun.fatal(refused) from None
        except HostKeyUnknown as question:
            q = question.question
            say(ConnectionState.HOST_KEY_QUESTION, q.fingerprint)
            if ask is None or not await ask(q):
                raise EndOfRun.fatal(question) from None
            known = provider.context.known_hosts
            assert known is not None
            await runner.run(known.trust_answer, q)
            say(ConnectionState.CONNECTING, None)
