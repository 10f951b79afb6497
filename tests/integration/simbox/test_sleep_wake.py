"""The vmd rule on real boxes: silence sleeps a box (frozen), traffic keeps it up, a connect wakes it,
and a silent proxied connection neither keeps it up nor survives its sleep."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest
import simbox
from simbox import netbox
from simbox_helpers import (
    TapCapture,
    box_json,
    home_of,
    is_ipv6,
    ssh_client,
    stop_inside,
    wait_for,
    wait_state,
)

pytestmark = [pytest.mark.integration, pytest.mark.root]

WINDOW = 2.0


def _frozen_in_kernel(state: simbox.SimboxState) -> bool:
    rec = state.boxes[0]
    assert rec.cgroup is not None
    return "frozen 1" in Path(rec.cgroup, "cgroup.events").read_text()


def test_idle_box_sleeps_after_window_frozen_and_reading_health_does_not_wake_it(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=1, window=WINDOW)
    rec = state.boxes[0]
    home = home_of(state)
    # a busy process inside that uses no network: the vmd rule does not see it
    tick = Path(rec.home) / "tick"
    worker = subprocess.Popen(simbox.exec_argv(
        "box1", ["sh", "-c", f'while :; do date +%s.%N > {tick}; sleep 0.05; done'], home=home))
    try:
        cap = TapCapture(rec.host_if)
        try:
            frames = cap.frames(WINDOW + 1.5, stop=lambda f, b: False)
        finally:
            cap.close()
        assert not [f for _, f, _ in frames if is_ipv6(f)], "IPv6 chatter on a box with IPv6 off"
        data = wait_state(state, "asleep", 2.0)
        sleep = next(h for h in data["history"] if h["event"] == "sleep")
        assert sleep["reason"] == "idle window"
        assert WINDOW <= sleep["idle_for_s"] < WINDOW + 0.5, sleep
        assert data["kernel_frozen"] is True and _frozen_in_kernel(state)
        assert data["freezer"] == "cgroup2"
        # every process of the box is frozen: the worker's clock stops moving
        frozen_at = tick.read_text()
        # reading the health endpoint (JSON, one box, HTML) over and over never wakes it
        for _ in range(15):
            assert box_json(state)["state"] == "asleep"
            simbox.status(home=home)
            time.sleep(0.1)
        assert tick.read_text() == frozen_at
        final = box_json(state)
        assert final["wakes"] == 0 and final["sleeps"] == 1 and _frozen_in_kernel(state)
        # and every process (as seen from the host) is in the frozen cgroup
        assert netbox.sshd_pid(rec) in [int(p) for p in Path(rec.cgroup or "", "cgroup.procs").read_text().split()]
    finally:
        stop_inside(worker, state)


def test_a_process_inside_sending_traffic_keeps_the_box_awake(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=1, window=WINDOW)
    rec = state.boxes[0]
    # one UDP byte to the gateway's port 9 every 0.4 s for 3.2 s (a window plus a counter read), then exit
    code = (f"import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            f"for _ in range(8):\n s.sendto(b'x',('{rec.host_addr}',9)); time.sleep(0.4)\n")
    sender = subprocess.Popen(simbox.exec_argv("box1", ["python3", "-c", code], home=home_of(state)))
    try:
        sender.wait(timeout=15)
    finally:
        stop_inside(sender, state)
    ended = time.monotonic()
    assert sender.returncode == 0
    data = box_json(state)
    assert data["state"] == "awake" and data["sleeps"] == 0
    assert data["last_activity_reason"] == "bytes"
    wait_state(state, "asleep", WINDOW + 1.0)
    assert time.monotonic() - ended <= WINDOW + 1.0


def test_connect_wakes_a_sleeping_box_and_ssh_exec_works(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=1, window=WINDOW)
    wait_state(state, "asleep", WINDOW + 1.5)
    t0 = time.monotonic()
    client = ssh_client(state)  # verifies the host key against the reported line (RejectPolicy)
    t_conn = time.monotonic() - t0
    try:
        _, out, _ = client.exec_command("echo hello from $(id -un); cat /proc/1/comm", timeout=10)
        lines = out.read().decode().splitlines()
    finally:
        client.close()
    t_exec = time.monotonic() - t0
    assert lines == [f"hello from {state.boxes[0].user}", "sshd"]
    data = box_json(state)
    wake = next(h for h in data["history"] if h["event"] == "wake")
    assert wake["reason"] == "proxy connect" and wake["settled"]
    assert wake["wake_s"] < 0.5 and wake["connect_s"] < 1.0
    assert t_exec < 1.5  # the goal for connect-to-first-answer on a sleeping box
    print(f"\nwake: thaw {wake['wake_s'] * 1000:.1f} ms, accept->upstream {wake['connect_s'] * 1000:.1f} ms, "
          f"ssh connect {t_conn * 1000:.0f} ms, connect->exec output {t_exec * 1000:.0f} ms")


def test_open_silent_connection_does_not_keep_box_awake_and_is_torn_down_at_sleep(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=1, window=WINDOW)
    port = state.boxes[0].proxy_port
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        banner = sock.recv(256)
        assert banner.startswith(b"SSH-2.0-")
        opened = time.monotonic()
        assert wait_for(lambda: box_json(state)["open_connections"] == 1, 2)
        sock.settimeout(WINDOW + 3)
        try:
            rest = sock.recv(256)
        except ConnectionResetError:
            rest = b""
        dropped = time.monotonic() - opened
    assert rest == b"", rest
    data = wait_for(lambda: (d := box_json(state))["history"] and d["history"][0]["settled"] and d, 5)
    sleep = next(h for h in data["history"] if h["event"] == "sleep")
    assert sleep["connections_torn_down"] == 1 and data["open_connections"] == 0
    assert data["state"] == "asleep"
    # the banner's bytes are seen at the next once-a-second counter read, so up to a second later
    assert WINDOW - 0.2 <= dropped <= WINDOW + 1.5, dropped
    print(f"\nsilent connection dropped {dropped:.3f} s after its last byte (window {WINDOW} s), "
          f"freeze took {sleep['freeze_s'] * 1000:.1f} ms")


def test_admin_sleep_and_wake_through_the_api(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=2, window=30.0)
    home = home_of(state)
    res = simbox.sleep("box2", home=home)
    assert res["changed"] and res["box"]["state"] == "asleep"
    assert simbox.sleep("box2", home=home)["changed"] is False
    assert box_json(state, "box1")["state"] == "awake"  # only that box
    res = simbox.wake("box2", home=home)
    assert res["changed"] and res["event"]["wake_s"] < 0.5
    assert box_json(state, "box2")["state"] == "awake"
    with pytest.raises(simbox.SimboxError, match="404"):
        simbox.wake("box9", home=home)
