"""The request meter's endpoint proxy (docs/simbox.md): 127.0.0.1:<port> -> an HTTP server inside the box.

On a request-metered box only requests through here reset the idle clock: each counts when it starts
and when it ends. Work inside the guest and its own loopback requests never pass here, so they do not
count. A request to a sleeping (suspended) box resumes it first. One request per connection: the proxy
sends `Connection: close` both ways, so a request's end is unambiguous. Every connection is tracked and
destroyed when the box is suspended, like the SSH proxy's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from simbox.box import BoxRuntime
from simbox.proxy import copy_counted, track

log = logging.getLogger("simbox")
MAX_HEAD = 65536
HEAD_TIMEOUT = 10.0
UPSTREAM_CONNECT_TIMEOUT = 10.0
CHUNK = 65536
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"}


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _error(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    body = (message + "\n").encode()
    writer.write(f"HTTP/1.1 {status} Simbox\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise BadRequest(400, "incomplete request head") from exc
        return None  # connected and left without a request: not a request
    except asyncio.LimitOverrunError as exc:
        raise BadRequest(431, "request head too large") from exc


def rewrite_head(head: bytes) -> tuple[bytes, int]:
    """Validate a request head; return it with `Connection: close`, and the body length."""
    lines = head.decode("latin-1").split("\r\n")
    request = lines[0].split()
    if len(request) != 3 or not request[2].startswith("HTTP/1."):
        raise BadRequest(400, "malformed request line")
    out, length = [lines[0]], 0
    for line in lines[1:]:
        if not line:
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise BadRequest(400, "malformed header")
        k = key.strip().lower()
        if k in HOP_BY_HOP:
            continue
        if k == "transfer-encoding":
            raise BadRequest(501, "chunked request bodies are not supported by the simulator")
        if k == "content-length":
            try:
                length = int(value.strip())
            except ValueError as exc:
                raise BadRequest(400, "bad Content-Length") from exc
            if length < 0:
                raise BadRequest(400, "bad Content-Length")
        out.append(line)
    out.append("Connection: close")
    return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1"), length


IDLE_READ_PATH = b"/.simbox/idle"


def _is_idle_read(head: bytes) -> bool:
    parts = head.split(b"\r\n", 1)[0].split(b" ")
    return len(parts) >= 2 and parts[1].split(b"?", 1)[0] == IDLE_READ_PATH


async def handle(box: BoxRuntime, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    conn = track(box, writer)
    accepted = conn.opened
    started = clean = False
    try:
        try:
            head = await _read_head(reader)
            if head is None:
                clean = True
                return
            new_head, length = rewrite_head(head)
        except BadRequest as exc:
            _error(writer, exc.status, str(exc))
            clean = True
            return
        except TimeoutError:
            _error(writer, 408, "request head timeout")
            clean = True
            return
        started = True
        box.touch("request start")
        wake_entry = await box.wake("request") if box.asleep else None
        if _is_idle_read(new_head):
            # The platform's idle timer read through its own proxy: a request like any other, so it counts
            # as activity (and keeps the box up). Counted so tests can show the app never reads it this way.
            box.reads_as_activity += 1
            body = json.dumps({"idle_for_s": 0.0, "idle_window_s": box.clock.window}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            clean = True
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(box.record.box_addr, box.record.guest_port), UPSTREAM_CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            _error(writer, 502, f"nothing answers at {box.record.box_addr}:{box.record.guest_port} ({exc})")
            clean = True
            return
        conn.upstream = up_writer
        if conn.torn_down or box.asleep:
            conn.destroy()
            return
        if wake_entry is not None:
            wake_entry["connect_s"] = round(time.monotonic() - accepted, 4)
        up_writer.write(new_head)
        await copy_counted(reader, up_writer, conn, True, length)
        await copy_counted(up_reader, writer, conn, False)
        clean = True
    except (ConnectionError, OSError):
        clean = False
    finally:
        box.conns.discard(conn)
        if not conn.torn_down:
            if clean:
                with contextlib.suppress(ConnectionError, OSError):
                    await writer.drain()
                for w in (writer, conn.upstream):
                    if w is not None:
                        w.close()
            else:
                conn.destroy()
            if started:
                box.touch("request end")


async def start(box: BoxRuntime, port: int = 0) -> asyncio.Server:
    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handle(box, reader, writer)
        except Exception:  # one bad request must never take the daemon down
            log.exception("%s: request proxy failed", box.record.name)
            writer.transport.abort()

    return await asyncio.start_server(on_client, "127.0.0.1", port, limit=MAX_HEAD)
