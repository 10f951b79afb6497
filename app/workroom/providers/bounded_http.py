"""The one HTTP client every poll uses: keep-awake polls, idle-clock reads, a simulated box's state.

Each request is bounded whatever the server does (docs/security.md): http and https only (a `file://` idle
clock once read a local file, `/dev/zero` grew the app to 2.8 GB), no redirects (a 302 led to another
address), one overall deadline for the whole exchange (a server trickling a byte every 4 s held a poll past
25 s when the limit was per read), a cap on the body (an endless one reached 2.6 GB), and every parse error
turned into words (200,000 nested `[` raised RecursionError out of the keep-awake task). Requests run on
their own small thread pool, never the loop's default executor: stuck polls cannot starve a relay's sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from workroom.daemon_threads import DaemonThreads

MAX_BODY_BYTES = 64 * 1024
"""A health answer or an idle-clock document is a few hundred bytes."""
POLL_WORKERS = 4

_executor: DaemonThreads | None = None
_executor_lock = threading.Lock()


def poll_executor() -> DaemonThreads:
    """The polls' own threads (created on first use; daemon threads: a poll in flight never holds a leaving
    process)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = DaemonThreads("wr-poll", workers=POLL_WORKERS)
        return _executor


class PollFailed(Exception):
    """A poll that got no usable answer; the message is plain words (never an exception's type)."""


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: bytes


def get(url: str, deadline_seconds: float, max_body: int = MAX_BODY_BYTES) -> HttpAnswer:
    """GET `url` (blocking): the status and at most `max_body` bytes of body, all within `deadline_seconds`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PollFailed(f"only http:// and https:// addresses are polled, not {url[:80]!r}")
    try:
        port = parts.port
    except ValueError:
        raise PollFailed(f"the address {url[:80]!r} has a bad port") from None
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, port, timeout=deadline_seconds)
    expired = threading.Event()

    def abort() -> None:  # the overall deadline: wakes a read that a trickling server keeps alive
        expired.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(deadline_seconds, abort)
    timer.daemon = True
    timer.start()
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("GET", target, headers={"Accept": "application/json", "Connection": "close"})
        reply = conn.getresponse()
        if 300 <= reply.status < 400:
            raise PollFailed(f"answered HTTP {reply.status}; redirects are not followed")
        body = bytearray()
        while len(body) <= max_body:
            chunk = reply.read(min(65536, max_body + 1 - len(body)))
            if not chunk:
                break
            body += chunk
        if len(body) > max_body:
            raise PollFailed(f"the answer was larger than {max_body // 1024} KiB")
        return HttpAnswer(reply.status, bytes(body))
    except PollFailed:
        raise
    except (OSError, http.client.HTTPException, ValueError) as error:
        if expired.is_set():
            raise PollFailed(f"no complete answer within {deadline_seconds:g} s") from None
        raise PollFailed(f"the request failed ({error or 'the server closed the connection'})") from None
    finally:
        timer.cancel()
        conn.close()


def parse_json(body: bytes) -> object:
    """The body as JSON; any way it cannot be read is `PollFailed`."""
    try:
        return json.loads(body.decode("utf-8"))
    except RecursionError:
        raise PollFailed("the answer is JSON nested too deeply to read") from None
    except (ValueError, UnicodeDecodeError):
        raise PollFailed("the answer is not JSON") from None


async def get_json(url: str, deadline_seconds: float, max_body: int = MAX_BODY_BYTES) -> object:
    """GET `url` on the polls' own threads and parse its JSON; HTTP errors and every failure: `PollFailed`."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(poll_executor(), get, url, deadline_seconds, max_body)
    try:
        answer = await asyncio.wait_for(future, deadline_seconds + 2.0)  # DNS is outside the socket's deadline
    except TimeoutError:
        raise PollFailed(f"no complete answer within {deadline_seconds:g} s") from None
    if answer.status != 200:
        raise PollFailed(f"answered HTTP {answer.status}")
    return parse_json(answer.body)
