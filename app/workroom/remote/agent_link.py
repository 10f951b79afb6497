"""One live stream to an agent: the local Unix socket, or a relay running over an SSH channel.

Either way the result is an `AgentLink`: an `AgentClient` fed from the stream, a `closed` future that
completes (with the reason, in plain words) exactly once when the stream ends, and `close()` that destroys
the stream (both ends, nothing left half-open: docs/architecture.md, a dead box must be noticed). When the
stream itself said how it ended (a `UserError`: the SSH connection was lost, the relay's command failed),
that error is kept as `end_error`, title and hint included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from workroom.app_link import peer_uid
from workroom.core.errors import UserError
from workroom.core.protocol import MAX_LINE_BYTES
from workroom.daemon_threads import DaemonThreads
from workroom.paths import check_private_dir
from workroom.remote.agent_client import AgentClient, EventHandler

READ_CHUNK = 65536

log = logging.getLogger(__name__)


class AgentLink:
    def __init__(self, client: AgentClient, closer: Callable[[], None]) -> None:
        self.client = client
        self._closer = closer
        self.closed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.end_error: UserError | None = None
        """How the stream said it ended, when it said so as a `UserError` (set before `closed` completes)."""
        self.preamble: asyncio.Future[bytes] | None = None
        """For a stream that starts with a command's answer before the protocol (`open_stream_link(preamble=)`):
        the lines up to and including the first JSON object line; fails with `PreambleError` past its limit or
        when the stream ends first."""

    def _ended(self, why: str, error: UserError | None = None) -> None:
        if self.preamble is not None and not self.preamble.done():
            self.preamble.set_exception(PreambleError(why, error))
        self.client.feed_eof(why)
        if not self.closed.done():
            self.end_error = error
            self.closed.set_result(why)

    def close(self, why: str = "closed by the app") -> None:
        with contextlib.suppress(Exception):
            self._closer()
        self._ended(why)


class PreambleError(Exception):
    """The stream ended (or said too much) before the answer that leads it: `why` in words, `error` when the
    stream said how it ended as a `UserError`, `too_long` when it went past the limit."""

    def __init__(self, why: str, error: UserError | None = None, *, too_long: bool = False) -> None:
        super().__init__(why)
        self.why, self.error, self.too_long = why, error, too_long


class _Preamble:
    """Takes the lines before the protocol: up to and including the first that is a JSON object (a login
    script's chatter before it is kept, as a command's output would be), at most `limit` bytes in all."""

    def __init__(self, future: asyncio.Future[bytes], limit: int) -> None:
        self.future, self.limit, self._buf = future, limit, bytearray()

    def take(self, lines: list[bytes]) -> list[bytes]:
        """Feeds the preamble from `lines`; returns the lines that follow it (the protocol's)."""
        for i, line in enumerate(lines):
            if self.future.done():
                return lines[i:]
            self._buf += line
            if len(self._buf) > self.limit:
                self.future.set_exception(PreambleError(
                    f"the host printed more than {self.limit // 1024} KiB before the probe's answer", too_long=True))
                return []
            if line.lstrip().startswith(b"{"):
                self.future.set_result(bytes(self._buf))
        return []


class _LineSplitter:
    """Bytes in, complete lines out; a line over the limit ends the stream (the agent never sends one)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        lines = []
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                break
            lines.append(bytes(self._buf[: nl + 1]))
            del self._buf[: nl + 1]
        if len(self._buf) > MAX_LINE_BYTES + 1:
            raise ValueError(f"the agent sent a line over {MAX_LINE_BYTES} bytes")
        return lines


def plain_reason(words: str) -> str:
    """`words` as the end of a sentence that goes on (no trailing full stop, no surrounding spaces)."""
    return words.strip().rstrip(".").rstrip()


class UntrustedAgentError(PermissionError):
    """The local socket's folder or the process behind it is not this user's: nothing it says is trusted."""


async def open_unix_link(socket_path: str, on_event: EventHandler | None) -> AgentLink:
    """Connect to a local agent's socket, after checking that its folder is private to this user and that
    the process answering runs as this user (before its hello is read, let alone trusted)."""
    loop = asyncio.get_running_loop()
    try:
        check_private_dir(Path(socket_path).parent)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise UntrustedAgentError(f"refusing the agent socket {socket_path}: {error}") from None
    reader, writer = await asyncio.open_unix_connection(socket_path, limit=MAX_LINE_BYTES + 2)
    sock = writer.get_extra_info("socket")
    try:
        uid = peer_uid(sock) if sock is not None else None
    except OSError:
        uid = None
    if uid != os.getuid():
        writer.close()
        raise UntrustedAgentError(
            f"refusing the agent socket {socket_path}: the process behind it runs as uid {uid}, not as this user"
        )

    async def send(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    def closer() -> None:
        writer.close()

    client = AgentClient(send, on_event, held=True)  # events wait until the agent proves who it is
    link = AgentLink(client, closer)
    splitter = _LineSplitter()

    async def pump() -> None:
        why = "the agent closed the connection"
        try:
            while True:
                data = await reader.read(READ_CHUNK)
                if not data:
                    break
                for line in splitter.feed(data):
                    client.feed_line(line)
        except (OSError, ValueError) as error:
            why = str(error)
        finally:
            writer.close()
            link._ended(why)

    link._pump = loop.create_task(pump())  # type: ignore[attr-defined]
    return link


class BlockingStream(Protocol):
    """A paramiko Channel (or anything shaped like one)."""

    def recv(self, nbytes: int) -> bytes:
        """Data, or b"" at a clean end; a stream that knows how it failed raises that as a `UserError`."""
        ...

    def sendall(self, data: bytes) -> None: ...

    def close(self) -> None: ...


def open_stream_link(stream: BlockingStream, on_event: EventHandler | None, name: str = "agent",
                     *, preamble: int | None = None) -> AgentLink:
    """Wrap a blocking stream (e.g. `relay` over SSH): one reader thread, sends off the event loop.

    `preamble` (a byte limit): the stream starts with a command's answer (the install probe's), handed over
    as `link.preamble` and never to the client; the protocol follows it."""
    loop = asyncio.get_running_loop()
    # The link's own sending thread (started with the first send; sends in order): a send stuck on a peer that
    # stopped reading (a full channel window) holds this link alone, never the loop's shared executor, where
    # a few such sends queued every other host's blocking work (an uninstall waited > 90 s, CI).
    sender = DaemonThreads(f"wr-send-{name}")

    async def send(data: bytes) -> None:
        try:
            await asyncio.wrap_future(sender.submit(stream.sendall, data))
        except RuntimeError:  # the link closed (its sender shut down) before this send was taken
            raise OSError("the link is closed") from None
        except OSError as error:
            link.close(f"sending failed: {error}")
            raise

    def close_quietly() -> None:
        with contextlib.suppress(Exception):  # already gone with its connection: nothing left to close
            stream.close()

    def close_off_loop() -> None:
        # Closing a paramiko channel sends a packet and may wait on the transport: never on the loop.
        sender.shutdown(wait=False)  # a send still queued meets the closed stream and fails as sends then do
        threading.Thread(target=close_quietly, name=f"wr-close-{name}", daemon=True).start()

    client = AgentClient(send, on_event, held=True)  # events wait until the agent proves who it is
    link = AgentLink(client, close_off_loop)
    splitter = _LineSplitter()
    lead: _Preamble | None = None
    if preamble is not None:
        link.preamble = loop.create_future()
        link.preamble.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody waiting is no error
        lead = _Preamble(link.preamble, preamble)

    def reader() -> None:
        why = "the host closed the connection"
        end_error: UserError | None = None
        heard = False
        try:
            while True:
                data = stream.recv(READ_CHUNK)
                if not data:
                    break
                heard = True
                lines = splitter.feed(data)
                if lines and not loop.is_closed():
                    loop.call_soon_threadsafe(_deliver, lines)
        except UserError as error:  # the stream's own account of its end: kept whole, words and hint
            why, end_error = plain_reason(error.message), error
            # A stream that never said a word is one the session tried ahead of time (the relay opened while
            # the first connect's probe runs, before any agent is installed): its end is the session's to
            # report, not an error of its own in the log.
            (log.info if heard else log.debug)("the stream to %s ended: %s", name, error)
        except Exception as error:  # any other failure of the stream ends it visibly
            # The exception's type is for the log; the reason a person reads is its words alone.
            log.warning("the stream to %s failed: %s: %s", name, type(error).__name__, error)
            why = plain_reason(str(error)) or "the stream to the host failed"
        finally:
            with contextlib.suppress(Exception):
                stream.close()
            sender.shutdown(wait=False)  # the stream is over: its sending thread ends too (closed or not)
            # A loop already closed (the app quitting) must not be touched: with Qt's loop that would
            # reach objects already deleted.
            if not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(link._ended, why, end_error)

    def _deliver(lines: list[bytes]) -> None:
        if lead is not None and not lead.future.done():
            lines = lead.take(lines)
            if lead.future.done() and not lead.future.cancelled() and lead.future.exception() is not None:
                link.close("the host said too much before the probe's answer")
                return
        for line in lines:
            client.feed_line(line)

    threading.Thread(target=reader, name=f"wr-link-{name}", daemon=True).start()
    return link
