"""The provider daemon: builds N boxes, meters their taps, proxies SSH to them, serves the health page.

Started (backgrounded) by `up`; stops on SIGTERM/SIGINT and removes everything it made. Every resource
is written to the state file before it is created, so `down` can finish the job if this process dies.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from simbox import freezer, health, netbox, proxy, request_proxy
from simbox.box import BoxRuntime
from simbox.idle_clock import IdleClock
from simbox.state import SimboxState, write_state

log = logging.getLogger("simbox")


class Daemon:
    def __init__(self, state: SimboxState, state_file: Path, tick: float, guest_port: int = 8080) -> None:
        self.state, self.state_file, self.tick, self.guest_port = state, state_file, tick, guest_port
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.boxes: dict[str, BoxRuntime] = {}
        self.tasks: dict[str, asyncio.Task[Any]] = {}

    def save(self) -> None:
        write_state(self.state, self.state_file)

    # --- building (synchronous, before the event loop) -------------------------------------------
    def build(self, n: int, *, ipv6: bool, preferred_freezer: str) -> None:
        mechanism, root = freezer.detect(preferred_freezer)
        self.state.freezer = mechanism
        base = Path(self.state.dir)
        key = Path(self.state.client_key)
        for p in (key, key.with_suffix(".pub")):
            p.unlink(missing_ok=True)
        netbox.keygen(key, "simbox-client")
        pubkey = key.with_suffix(".pub").read_text()
        with netbox.allocation_lock():
            for i in range(1, n + 1):
                box_dir = base / "boxes" / f"box{i}"
                box_dir.mkdir(parents=True, exist_ok=True)
                rec = netbox.plan(self.state.run_id, i, netbox.free_subnet(), idle_window=self.state.idle_window_s,
                                  mechanism=mechanism, cgroup_root=root, box_dir=box_dir)
                if self.state.metering == "requests":
                    rec.guest_port = self.guest_port
                self.state.boxes.append(rec)
                self.save()  # recorded before it exists
                netbox.create_network(rec, ipv6=ipv6)
        for rec in self.state.boxes:
            rec.uid = netbox.create_user(rec, pubkey)
            self.save()
            if rec.cgroup:
                Path(rec.cgroup).mkdir(exist_ok=True)
            proc = netbox.start_sshd(rec, Path(rec.dir) / "sshd.log")
            self.procs[rec.name] = proc
            rec.init_pid = proc.pid
            self.save()
        for rec in self.state.boxes:
            netbox.wait_sshd(rec, self.procs[rec.name])

    def teardown(self) -> list[str]:
        problems: list[str] = []
        for rec in self.state.boxes:
            problems += netbox.destroy(rec)
            proc = self.procs.get(rec.name)
            if proc is not None:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    problems.append(f"{rec.name}: init {proc.pid} did not exit")
        return problems

    # --- running ------------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        s = self.state
        return {"daemon_pid": os.getpid(), "run_id": s.run_id, "idle_window_s": s.idle_window_s,
                "ipv6": s.ipv6, "freezer": s.freezer, "metering": s.metering, "started_at": s.started_at}

    def _sleep_done(self, task: asyncio.Task[Any]) -> None:
        for name, t in list(self.tasks.items()):
            if t is task:
                del self.tasks[name]
        if not task.cancelled() and task.exception() is not None:
            log.error("sleep failed: %r", task.exception())

    async def meter(self) -> None:
        """Read every tap once per tick, and also exactly when a box's window runs out, then decide."""
        next_tick = time.monotonic()
        while True:
            now = time.monotonic()
            for box in self.boxes.values():
                box.sample(now)
                name = box.record.name
                if box.clock.due(now) and name not in self.tasks:
                    self.tasks[name] = task = asyncio.create_task(box.sleep("idle window"))
                    task.add_done_callback(self._sleep_done)
            if now >= next_tick:
                next_tick = now + self.tick
            dues = [b.clock.last_activity + b.clock.window for b in self.boxes.values() if not b.asleep]
            wake_at = min([next_tick, *[d for d in dues if d > now]])
            await asyncio.sleep(max(0.001, wake_at - time.monotonic()))

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        now = time.monotonic()
        servers = []
        for rec in self.state.boxes:
            clock = IdleClock(window=rec.idle_window_s, now=now, count_bytes=self.state.metering == "network")
            box = BoxRuntime(rec, clock)
            box.sample(now)
            self.boxes[rec.name] = box
            server = await proxy.start(box)
            servers.append(server)
            rec.proxy_port = server.sockets[0].getsockname()[1]
            rec.host_key_line = netbox.host_key_line(rec, rec.proxy_port)
            if self.state.metering == "requests":
                rserver = await request_proxy.start(box)
                servers.append(rserver)
                rec.http_port = rserver.sockets[0].getsockname()[1]
        hserver = await health.start(health.Health(self.boxes, self.info))
        servers.append(hserver)
        self.state.health_port = hserver.sockets[0].getsockname()[1]
        self.state.ready = True
        self.save()
        log.info("ready: %d box(es), health %s", len(self.boxes), self.state.health_url)
        meter = asyncio.create_task(self.meter())
        await stop.wait()
        log.info("stopping")
        meter.cancel()
        for server in servers:
            server.close()
        for box in self.boxes.values():
            for conn in list(box.conns):
                conn.destroy()


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="simbox _daemon")
    p.add_argument("--boxes", type=int, required=True)
    p.add_argument("--idle-window", type=float, required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--ipv6-on", action="store_true")
    p.add_argument("--freezer", default="auto")
    p.add_argument("--tick", type=float, default=1.0)
    p.add_argument("--metering", choices=["network", "requests"], default="network")
    p.add_argument("--guest-port", type=int, default=8080)
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    base = Path(args.dir)
    state_file = base / "state.json"
    state = SimboxState(run_id=secrets.token_hex(3)[:5], daemon_pid=os.getpid(), idle_window_s=args.idle_window,
                        ipv6=args.ipv6_on, freezer="", client_key=str(base / "client_ed25519"), dir=str(base),
                        started_at=time.time(), metering=args.metering)
    daemon = Daemon(state, state_file, args.tick, args.guest_port)
    daemon.save()
    # SIGTERM during the build: finish building, then tear down (the loop's handler takes over later).
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    code = 0
    try:
        daemon.build(args.boxes, ipv6=args.ipv6_on, preferred_freezer=args.freezer)
        if not stopping:
            asyncio.run(daemon.serve())
    except Exception as exc:
        log.exception("simbox daemon failed")
        state.error = f"{type(exc).__name__}: {exc}"
        daemon.save()
        code = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        problems = daemon.teardown()
        for p in problems:
            log.error("cleanup: %s", p)
        if code == 0 and not problems:
            state_file.unlink(missing_ok=True)
        log.info("stopped")
    return code
