"""Helpers for the simulator's integration tests: health reads, bounded waits, SSH, tap capture."""


from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paramiko
import simbox

ETH_P_ALL = 0x0003


def box_json(state: simbox.SimboxState, name: str = "box1") -> dict[str, Any]:
    return simbox.box_status(name, home=home_of(state))


def wait_for(pred: Callable[[], Any], timeout: float, step: float = 0.05) -> Any:
    """Bounded poll: the predicate's first truthy value, or AssertionError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(step)


def wait_state(state: simbox.SimboxState, want: str, timeout: float, name: str = "box1") -> dict[str, Any]:
    return wait_for(lambda: (d := box_json(state, name))["state"] == want and d, timeout)  # type: ignore[no-any-return]


def ssh_client(state: simbox.SimboxState, name: str = "box1") -> paramiko.SSHClient:
    """paramiko through the proxy, with the reported client key, checking the reported host key line."""
    box = state.box(name)
    assert box.host_key_line is not None
    host, key_type, key_b64 = box.host_key_line.split()
    client = paramiko.SSHClient()
    client.get_host_keys().add(host, key_type, paramiko.Ed25519Key(data=base64.b64decode(key_b64)))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect("127.0.0.1", port=box.proxy_port, username=box.user, key_filename=state.client_key,
                   look_for_keys=False, allow_agent=False, timeout=10, banner_timeout=10, auth_timeout=10)
    return client


class TapCapture:
    """Raw frames seen on a box's host end ("tap"), with direction: what the box sent vs the host."""

    PACKET_OUTGOING = 4

    def __init__(self, ifname: str) -> None:
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((ifname, 0))
        self.sock.settimeout(0.2)

    def frames(self, duration: float, stop: Callable[[bytes, bool], bool] | None = None
               ) -> list[tuple[float, bytes, bool]]:
        """(time, frame, from_box) for `duration` s, or until stop(frame, from_box) is true."""
        out = []
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            try:
                frame, addr = self.sock.recvfrom(65536)
            except TimeoutError:
                continue
            from_box = addr[2] != self.PACKET_OUTGOING
            out.append((time.time(), frame, from_box))
            if stop and stop(frame, from_box):
                break
        return out

    def close(self) -> None:
        self.sock.close()


def is_ipv6(frame: bytes) -> bool:
    return len(frame) >= 14 and struct.unpack("!H", frame[12:14])[0] == 0x86DD


def is_router_solicitation(frame: bytes) -> bool:
    return is_ipv6(frame) and len(frame) >= 55 and frame[20] == 58 and frame[54] == 133


def home_of(state: simbox.SimboxState) -> Path:
    """The WORKROOM_HOME root a state was made under (its dir is <home>/state/simbox)."""
    return Path(state.dir).parents[1]


def stop_inside(proc: subprocess.Popen[Any], state: simbox.SimboxState, name: str = "box1") -> None:
    """Stop a command started with `simbox.exec_argv`, by PID: first the command inside the box (so
    nsenter reaps it at once, rather than orphaning it to a slow host init), then nsenter itself.
    A sleeping box is woken first: nsenter sits in the box's frozen cgroup and could not reap."""
    if proc.poll() is None and box_json(state, name)["state"] == "asleep":
        simbox.wake(name, home=home_of(state))
    if proc.poll() is None:
        try:
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        except FileNotFoundError:
            kids = []
        for kid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(kid), signal.SIGKILL)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait(timeout=5)
