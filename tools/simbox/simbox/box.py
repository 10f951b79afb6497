"""One box at run time inside the daemon: its idle clock, freezer, tracked connections and history.

All state changes happen on the daemon's event loop; sleep and wake are serialised by a per-box lock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simbox import freezer
from simbox.idle_clock import IdleClock
from simbox.state import BoxRecord

log = logging.getLogger("simbox")
HISTORY_LIMIT = 200
SETTLE_TIMEOUT = 5.0


def wall(mono: float) -> float:
    """A monotonic reading as wall-clock seconds, for display only."""
    return time.time() - (time.monotonic() - mono)


@dataclass(eq=False)
class TrackedConnection:
    """One proxied TCP connection, tied to the box's life: destroyed (both ends) when the box sleeps."""

    id: int
    peer: str
    opened: float
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None = None
    bytes_up: int = 0
    bytes_down: int = 0
    torn_down: bool = False

    def destroy(self) -> None:
        """Abort both ends (RST, not FIN): the client sees the line drop instead of a quiet end."""
        self.torn_down = True
        for w in (self.client, self.upstream):
            if w is not None:
                w.transport.abort()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "peer": self.peer, "opened_at": wall(self.opened),
                "open_for_s": round(time.monotonic() - self.opened, 3),
                "bytes_up": self.bytes_up, "bytes_down": self.bytes_down}


@dataclass(eq=False)
class BoxRuntime:
    record: BoxRecord
    clock: IdleClock
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    conns: set[TrackedConnection] = field(default_factory=set)
    history: list[dict[str, Any]] = field(default_factory=list)
    rx: int = 0
    tx: int = 0
    changing: bool = False
    idle_reads: int = 0
    """Reads of this box's idle clock on the health page (loopback: they never count as activity)."""
    reads_as_activity: int = 0
    """Reads of the idle clock that counted as activity (through the box's metered request proxy)."""
    _next_conn: int = 0

    @property
    def asleep(self) -> bool:
        return self.clock.asleep

    def new_conn_id(self) -> int:
        self._next_conn += 1
        return self._next_conn

    def read_counters(self) -> tuple[int, int]:
        base = Path("/sys/class/net", self.record.host_if, "statistics")
        return int((base / "rx_bytes").read_text()), int((base / "tx_bytes").read_text())

    def sample(self, now: float) -> bool:
        """Read the tap's counters once; True when they moved (activity unless asleep)."""
        try:
            self.rx, self.tx = self.read_counters()
        except (FileNotFoundError, ValueError):
            return False
        return self.clock.sample(self.rx, self.tx, now)

    def touch(self, reason: str) -> None:
        self.clock.touch(time.monotonic(), reason)

    def _record(self, event: str, **data: Any) -> dict[str, Any]:
        entry = {"event": event, "at": time.time(), **data}
        self.history.append(entry)
        del self.history[:-HISTORY_LIMIT]
        return entry

    async def _settle(self, frozen: bool) -> bool:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < deadline:
            if freezer.is_settled(self.record.freezer, self.record.cgroup, frozen):
                return True
            await asyncio.sleep(0.005)
        return False

    async def sleep(self, reason: str) -> dict[str, Any] | None:
        """Freeze every process and tear down every tracked connection. None if already asleep."""
        async with self.lock:
            if self.asleep:
                return None
            t0 = time.monotonic()
            idle_for = self.clock.idle_for(t0)
            # No await between these steps: a connection accepted now waits on the lock, then wakes us.
            self.clock.mark_asleep()
            freezer.request_freeze(self.record.freezer, self.record.cgroup, self.record.netns, True)
            torn = list(self.conns)
            for conn in torn:
                conn.destroy()
            entry = self._record("sleep", reason=reason, idle_for_s=round(idle_for, 3),
                                 window_s=self.clock.window, connections_torn_down=len(torn), settled=None,
                                 freeze_s=None)
            entry["settled"] = await self._settle(True)
            entry["freeze_s"] = round(time.monotonic() - t0, 4)
            log.info("%s asleep (%s) after %.3f s idle; tore down %d connection(s)",
                     self.record.name, reason, idle_for, len(torn))
            return entry

    async def wake(self, reason: str) -> dict[str, Any] | None:
        """Thaw; the window starts afresh. Returns the history entry (with wake_s), None if awake."""
        async with self.lock:
            if not self.asleep:
                return None
            t0 = time.monotonic()
            freezer.request_freeze(self.record.freezer, self.record.cgroup, self.record.netns, False)
            settled = await self._settle(False)
            now = time.monotonic()
            self.clock.mark_awake(now, f"wake: {reason}")
            entry = self._record("wake", reason=reason, wake_s=round(now - t0, 4), settled=settled)
            log.info("%s awake (%s) in %.4f s", self.record.name, reason, now - t0)
            return entry

    def to_json(self) -> dict[str, Any]:
        now = time.monotonic()
        c = self.clock
        r = self.record
        try:
            kernel_frozen: bool | None = freezer.is_settled(r.freezer, r.cgroup, True) \
                if r.freezer != freezer.SIGNAL else None
        except OSError:
            kernel_frozen = None
        return {
            "name": r.name, "state": "asleep" if c.asleep else "awake",
            "freezer": r.freezer, "kernel_frozen": kernel_frozen,
            "idle_window_s": c.window, "idle_for_s": round(c.idle_for(now), 3),
            "sleeps_in_s": None if c.asleep else round(max(0.0, c.window - c.idle_for(now)), 3),
            "last_activity_at": wall(c.last_activity), "last_activity_reason": c.last_activity_reason,
            "last_byte_at": wall(c.last_byte_at) if c.last_byte_at is not None else None,
            "rx_bytes": self.rx, "tx_bytes": self.tx,
            "open_connections": len(self.conns),
            "connections": [x.to_json() for x in sorted(self.conns, key=lambda x: x.id)],
            "sleeps": sum(1 for h in self.history if h["event"] == "sleep"),
            "wakes": sum(1 for h in self.history if h["event"] == "wake"),
            "history": self.history[-50:],
            "metering": "network" if c.count_bytes else "requests",
            "idle_reads": self.idle_reads, "reads_as_activity": self.reads_as_activity,
            "ssh": {"host": "127.0.0.1", "port": r.proxy_port, "user": r.user},
            "http": {"port": r.http_port, "guest_port": r.guest_port} if r.http_port else None,
            "netns": r.netns, "host_if": r.host_if, "host_addr": r.host_addr, "box_addr": r.box_addr,
            "cgroup": r.cgroup,
        }
