"""The loopback TCP proxy in front of each box's sshd: the provider sees, and owns, every connection.

A connection counts as activity when it starts and when it ends, never while it is open (an open but
silent connection must not keep a box awake); bytes that move still count through the tap's counters.
Connecting to a sleeping box wakes it first. Each connection is tracked from before the first await, so
one that ends early cannot leave the count wrong, and the box tears all of them down when it sleeps
(nothing outlives the box: docs/simbox.md, "The rule").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from simbox.box import BoxRuntime, TrackedConnection

log = logging.getLogger("simbox")
UPSTREAM_CONNECT_TIMEOUT = 10.0
CHUNK = 65536


async def copy_counted(src: asyncio.StreamReader, dst: asyncio.StreamWriter, conn: TrackedConnection,
                       up: bool, limit: int | None = None) -> None:
    """Copy src to dst (at most `limit` bytes when given), counting bytes on the tracked connection."""
    remaining = limit
    while remaining is None or remaining > 0:
        data = await src.read(CHUNK if remaining is None else min(CHUNK, remaining))
        if not data:
            if remaining:
                raise ConnectionError("the stream ended early")
            return
        if remaining is not None:
            remaining -= len(data)
        if up:
            conn.bytes_up += len(data)
        else:
            conn.bytes_down += len(data)
        dst.write(data)
        await dst.drain()


def track(box: BoxRuntime, writer: asyncio.StreamWriter) -> TrackedConnection:
    """Register a client connection with its box before the first await (torn down if the box sleeps)."""
    peer = writer.get_extra_info("peername")
    conn = TrackedConnection(box.new_conn_id(), f"{peer[0]}:{peer[1]}" if peer else "?", time.monotonic(), writer)
    box.conns.add(conn)
    return conn


async def handle(box: BoxRuntime, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    conn = track(box, writer)
    accepted = conn.opened
    clean = False
    try:
        box.touch("proxy connect")
        wake_entry = await box.wake("proxy connect") if box.asleep else None
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(box.record.box_addr, 22), UPSTREAM_CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            log.warning("%s: cannot reach sshd at %s:22: %s", box.record.name, box.record.box_addr, exc)
            return
        conn.upstream = up_writer
        if conn.torn_down or box.asleep:  # the box fell asleep while we connected
            conn.destroy()
            return
        if wake_entry is not None:
            wake_entry["connect_s"] = round(time.monotonic() - accepted, 4)
        tasks = [asyncio.create_task(copy_counted(reader, up_writer, conn, True)),
                 asyncio.create_task(copy_counted(up_reader, writer, conn, False))]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in pending:
            t.cancel()
        for t in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        clean = all(t.exception() is None for t in done if not t.cancelled())
    finally:
        box.conns.discard(conn)
        if not conn.torn_down:
            if clean:  # one side said goodbye: close both ends, nothing left half-open
                for w in (writer, conn.upstream):
                    if w is not None:
                        w.close()
            else:  # a stream that broke is destroyed, not quietly ended
                conn.destroy()
            box.touch("proxy disconnect")


async def start(box: BoxRuntime, port: int = 0) -> asyncio.Server:
    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handle(box, reader, writer)
        except Exception:  # one bad connection must never take the daemon down
            log.exception("%s: proxy connection failed", box.record.name)
            writer.transport.abort()

    return await asyncio.start_server(on_client, "127.0.0.1", port)
