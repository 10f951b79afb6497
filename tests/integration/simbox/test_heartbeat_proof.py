"""Is the heartbeat seen? Simulated boxes, the real agent, the real engine; a netfilter rule inside a box's
network namespace drops the heartbeat (UDP to its gateway, port 9) on its way out, as a firewall would.

- confirmed about one interval after the agent starts asserting (at most two);
- the rule turns the badge to "busy but not kept awake — the provider is not seeing the heartbeat" within
  one interval plus the margin, and the notification comes before the box sleeps; removing the rule
  restores "confirmed";
- with the rule kept, the box does sleep although the app stays connected and keeps reading its clock:
  neither the reads nor the app's own traffic keep it awake (and the simulator counts no read as activity);
- a window shorter than one interval plus the margin says the heartbeat cannot be confirmed.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
import simbox
from simbox_helpers import home_of
from workroom.agent_bundle import AgentBundle, locate_agent_bundle
from workroom.core.app_settings import AppSettings
from workroom.core.badge import BadgeKind
from workroom.core.heartbeat_proof import ProofState, margin_for, notification
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host, IdentityRef
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.protocol import Verdict
from workroom.paths import app_paths
from workroom.sessions.engine import Engine
from workroom.storage import save_settings

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(240)]

WINDOW = 30.0  # the simbox provider's heartbeat: a third of the window, 10 s
SLACK = 2.5  # the simulator samples once a second; reads and the loaded test machine add a little


@pytest.fixture
def bundle(tmp_path: Path) -> AgentBundle:
    return locate_agent_bundle(tmp_path / "cache")


def _engine(tmp: Path, bundle: AgentBundle, info: dict[str, Any], name: str) -> Engine:
    box = next(b for b in info["boxes"] if b["name"] == name)
    paths = app_paths({"WORKROOM_HOME": str(tmp / f"app-{name}")}).ensure()
    save_settings(paths, AppSettings())
    paths.known_hosts_file.write_text(box["host_key_line"] + "\n")
    engine = Engine(paths, bundle, auto_reconnect=False)
    engine.add_host(Host(name=name, provider="simbox", address="127.0.0.1", port=box["ssh_port"],
                         user=box["user"], identity=IdentityRef.file(box["client_key"]),
                         idle_window_seconds=box["idle_window_s"], reference={"health_url": box["health_url"]}))
    return engine


def _nft(netns: str, *args: str) -> None:
    subprocess.run(["ip", "netns", "exec", netns, "nft", *args], check=True, capture_output=True, timeout=10)


class HeartbeatBlock:
    """An nftables rule in the box's namespace dropping UDP to port 9 (the heartbeat) as it leaves eth0.

    The egress hook drops after the agent's send has succeeded, as a firewall on the path would: the agent
    sees no error. (A drop in the output hook fails the send with EPERM, which the agent already reports as
    a failing heartbeat — a different, already-visible case.)
    """

    TABLE = f"wrhb{os.getpid()}"

    def __init__(self, netns: str) -> None:
        self.netns = netns
        self.on = False

    def add(self) -> None:
        _nft(self.netns, "add", "table", "netdev", self.TABLE)
        _nft(self.netns, "add", "chain", "netdev", self.TABLE, "out",
             '{ type filter hook egress device "eth0" priority 0 ; policy accept ; }')
        _nft(self.netns, "add", "rule", "netdev", self.TABLE, "out", "udp", "dport", "9", "drop")
        self.on = True

    def remove(self) -> None:
        if self.on:
            _nft(self.netns, "delete", "table", "netdev", self.TABLE)
            self.on = False


@pytest.fixture
def sim(make_simbox: Any) -> Iterator[tuple[simbox.SimboxState, dict[str, Any]]]:
    if subprocess.run(["which", "nft"], capture_output=True).returncode != 0:
        pytest.skip("nftables is not installed (./dev setup installs it)")
    state = make_simbox(boxes=2, window=WINDOW)
    yield state, simbox.connection_info(state)


class Recorder:
    """Every snapshot a session publishes, with this computer's time, and the notifications they raise."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.snaps: list[tuple[float, HostSnapshot]] = []
        self.notes: list[tuple[float, str]] = []

    def __call__(self, snap: HostSnapshot) -> None:
        now = time.monotonic()
        previous = self.snaps[-1][1].connection.heartbeat_proof if self.snaps else None
        note = notification(self.name, snap.connection.heartbeat_proof, previous, now)
        if note is not None:
            self.notes.append((now, note[1]))
        self.snaps.append((now, snap))

    async def first(self, pred: Any, after: float, limit: float) -> tuple[float, HostSnapshot]:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            for at, snap in self.snaps:
                if at >= after and pred(snap):
                    return at, snap
            await asyncio.sleep(0.1)
        last = self.snaps[-1][1] if self.snaps else None
        raise AssertionError(f"{self.name}: not within {limit} s; last: {last and last.connection}")


def _run_then_close(scenario: Coroutine[Any, Any, None], engines: list[Engine]) -> None:
    """Run a scenario on a fresh loop; its engines are closed on that loop whatever happens."""

    async def run() -> None:
        try:
            await scenario
        finally:
            for engine in engines:
                await engine.close()

    asyncio.run(run())


def _kill(jobs: list[subprocess.Popen[bytes]]) -> None:
    for job in jobs:
        if job.poll() is None:
            job.kill()


def _asserting(snap: HostSnapshot) -> bool:
    s = snap.status
    return s is not None and s.verdict is Verdict.BUSY and bool(s.asserting)


def _proof(state: ProofState) -> Any:
    return lambda snap: (p := snap.connection.heartbeat_proof) is not None and p.state is state


def test_confirmed_then_not_seen_then_confirmed_again_and_a_box_left_dropping_sleeps(
        sim: tuple[simbox.SimboxState, dict[str, Any]], bundle: AgentBundle, tmp_path: Path) -> None:
    state, info = sim
    home = home_of(state)
    jobs: list[subprocess.Popen[bytes]] = []
    blocks = [HeartbeatBlock(state.box(n).netns) for n in ("box1", "box2")]
    engines = [_engine(tmp_path, bundle, info, n) for n in ("box1", "box2")]
    interval = WINDOW / 3
    limit = interval + margin_for(interval)

    async def scenario() -> None:
        s1, s2 = engines[0].session("box1"), engines[1].session("box2")
        r1, r2 = Recorder("box1"), Recorder("box2")
        s1.listeners.append(r1)
        s2.listeners.append(r2)
        await asyncio.gather(s1.connect(timeout=60), s2.connect(timeout=60))
        for name in ("box1", "box2"):
            jobs.append(subprocess.Popen(simbox.exec_argv(name, ["sleep", "600"], home=home)))

        # Confirmed at the second heartbeat (the first goes out with the status that starts the check, so it
        # proves nothing): about one interval after asserting — or one more when a status push happens to
        # travel with a heartbeat, since the clock then shows our own traffic last.
        t1, _ = await r1.first(_asserting, 0, 20)
        t2, _ = await r2.first(_asserting, 0, 20)
        confirmed_at, snap = await r1.first(_proof(ProofState.CONFIRMED), t1, 2 * interval + SLACK)
        assert snap.badge().kind is BadgeKind.BUSY
        await r2.first(_proof(ProofState.CONFIRMED), t2, 2 * interval + SLACK)

        # Drop the heartbeat in both boxes.
        dropped = time.monotonic()
        for block in blocks:
            await asyncio.to_thread(block.add)
        seen_at, snap = await r1.first(_proof(ProofState.NOT_SEEN), dropped, limit + SLACK + 2)
        assert seen_at - dropped <= limit + SLACK, seen_at - dropped
        result = snap.badge()
        assert result.kind is BadgeKind.BUSY_NOT_KEPT_AWAKE
        assert result.reason is NotKeptAwakeReason.PROVIDER_NOT_SEEING
        assert "not seeing the heartbeat (idle" in result.tooltip and "of a 30 s window" in result.tooltip
        assert r1.notes and r1.notes[0][0] <= seen_at + 0.5, r1.notes
        health = simbox.box_status("box1", home=home)
        assert health["state"] == "awake"  # noticed before the box sleeps

        # Removing the rule in box1 restores "confirmed" (the next heartbeat lands within one interval).
        await asyncio.to_thread(blocks[0].remove)
        restored = time.monotonic()
        await r1.first(_proof(ProofState.CONFIRMED), restored, interval + SLACK + 3)
        assert simbox.box_status("box1", home=home)["sleeps"] == 0

        # box2 keeps dropping: it sleeps although the app stays connected and keeps reading its clock.
        noted_at = r2.notes[0][0] if r2.notes else None
        deadline = time.monotonic() + WINDOW + 10
        while simbox.box_status("box2", home=home)["state"] != "asleep":
            assert time.monotonic() < deadline, "box2 did not sleep: something keeps it awake"
            await asyncio.sleep(0.5)
        slept_at = time.monotonic()
        assert noted_at is not None and noted_at < slept_at - 1, (noted_at, slept_at)
        print(f"\n[heartbeat proof] interval {interval:g} s, limit {limit:g} s: confirmed {confirmed_at - t1:.1f} s "
              f"after asserting; not seen {seen_at - dropped:.1f} s after the drop; notified "
              f"{slept_at - noted_at:.1f} s before box2 slept")
        for name in ("box1", "box2"):
            box = simbox.box_status(name, home=home)
            assert box["idle_reads"] > 0  # the app did read the clock ...
            assert box["reads_as_activity"] == 0  # ... never in a way that counts as activity

    try:
        _run_then_close(scenario(), engines)
    finally:
        for block in blocks:
            block.remove()
        _kill(jobs)


def test_a_window_too_short_to_confirm_says_so(make_simbox: Any, bundle: AgentBundle, tmp_path: Path) -> None:
    state = make_simbox(boxes=1, window=4.0)  # heartbeat every 1.3 s; 1.3 s + margin 3.1 s > 4 s
    info = simbox.connection_info(state)
    home = home_of(state)
    engine = _engine(tmp_path, bundle, info, "box1")
    job = None

    async def scenario() -> None:
        nonlocal job
        session = engine.session("box1")
        rec = Recorder("box1")
        session.listeners.append(rec)
        await session.connect(timeout=60)
        job = subprocess.Popen(simbox.exec_argv("box1", ["sleep", "600"], home=home))
        _, snap = await rec.first(_proof(ProofState.UNCONFIRMED), 0, 20)
        proof = snap.connection.heartbeat_proof
        assert proof is not None and proof.confirmed is None
        assert "idle window (4 s) is not longer than one heartbeat interval plus the margin" in proof.why
        assert "Confirmed" not in proof.why
        await engine.close()

    try:
        asyncio.run(scenario())
    finally:
        if job is not None and job.poll() is None:
            job.kill()


def test_request_metered_polls_that_do_not_move_the_platforms_timer_are_not_a_confirmation(
        make_simbox: Any, bundle: AgentBundle, tmp_path: Path) -> None:
    """box1 is polled through the platform's metered proxy (confirmed); box2's polls go straight to the box,
    past the meter, as a wrong gateway would send them: they succeed, but the timer does not move."""
    state = make_simbox(boxes=2, window=WINDOW, metering="requests", guest_port=8080)
    info = simbox.connection_info(state)
    home = home_of(state)
    jobs: list[subprocess.Popen[bytes]] = []
    engines: list[Engine] = []
    for box in info["boxes"]:
        poll_at = box["http_url"] if box["name"] == "box1" else f"http://{box['box_addr']}:8080"
        paths = app_paths({"WORKROOM_HOME": str(tmp_path / f"app-{box['name']}")}).ensure()
        paths.known_hosts_file.write_text(box["host_key_line"] + "\n")
        engine = Engine(paths, bundle, auto_reconnect=False)
        engine.add_host(Host(name=box["name"], provider="request-metered", address="127.0.0.1",
                             port=box["ssh_port"], user=box["user"], identity=IdentityRef.file(box["client_key"]),
                             idle_window_seconds=WINDOW,
                             reference={"proxy_url": poll_at, "idle_clock_url": box["health_url"]}))
        engines.append(engine)
    interval = WINDOW / 3  # KeepAwake's default: a third of the window
    limit = interval + margin_for(interval)

    async def scenario() -> None:
        s1, s2 = engines[0].session("box1"), engines[1].session("box2")
        r1, r2 = Recorder("box1"), Recorder("box2")
        s1.listeners.append(r1)
        s2.listeners.append(r2)
        await asyncio.gather(s1.connect(timeout=60), s2.connect(timeout=60))
        for name in ("box1", "box2"):
            jobs.append(subprocess.Popen(simbox.exec_argv(name, ["sleep", "600"], home=home)))
        polling = lambda snap: snap.connection.keepawake_running  # noqa: E731
        t1, _ = await r1.first(polling, 0, 20)
        t2, _ = await r2.first(polling, 0, 20)
        confirmed_at, snap = await r1.first(_proof(ProofState.CONFIRMED), t1, interval + SLACK + 2)
        assert snap.badge().kind is BadgeKind.BUSY
        seen_at, snap = await r2.first(_proof(ProofState.NOT_SEEN), t2, limit + SLACK + 2)
        assert snap.connection.keepawake_running and snap.connection.keepawake_error is None  # polls succeed
        result = snap.badge()
        assert result.kind is BadgeKind.BUSY_NOT_KEPT_AWAKE
        assert result.reason is NotKeptAwakeReason.PROVIDER_NOT_SEEING
        assert r2.notes, "no notification"
        deadline = time.monotonic() + WINDOW + 10
        while simbox.box_status("box2", home=home)["state"] != "asleep":
            assert time.monotonic() < deadline, "box2 was not suspended"
            await asyncio.sleep(0.5)
        assert r2.notes[0][0] < time.monotonic() - 1
        assert simbox.box_status("box1", home=home)["state"] == "awake"
        print(f"\n[request-metered proof] confirmed {confirmed_at - t1:.1f} s after polling began; "
              f"not seen {seen_at - t2:.1f} s after")
        for name in ("box1", "box2"):
            box = simbox.box_status(name, home=home)
            assert box["idle_reads"] > 0 and box["reads_as_activity"] == 0

    try:
        _run_then_close(scenario(), engines)
    finally:
        _kill(jobs)


def test_reading_the_idle_clock_through_the_metered_proxy_would_count(make_simbox: Any) -> None:
    """The counter the tests above assert zero on can count: a read through the box's request proxy."""
    import urllib.request

    state = make_simbox(boxes=1, window=WINDOW, metering="requests", guest_port=8080)
    box = simbox.connection_info(state)["boxes"][0]
    with urllib.request.urlopen(box["http_url"] + "/.simbox/idle", timeout=5) as reply:
        assert reply.status == 200
    after = simbox.box_status("box1", home=home_of(state))
    assert after["reads_as_activity"] == 1
    assert after["last_activity_reason"] in ("request start", "request end")
