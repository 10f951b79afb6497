"""Freezing every process of a box: cgroup v2 freezer, else the v1 freezer, else SIGSTOP by PID.

A cgroup freezes the whole box atomically, including processes started after the freeze request;
SIGSTOP is the last resort (it races with forks), used only where neither freezer exists.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

CGROUP2 = "cgroup2"
CGROUP1 = "cgroup1"
SIGNAL = "signal"
MECHANISMS = (CGROUP2, CGROUP1, SIGNAL)
CGROUP_PREFIX = "wrsimbox-"


def _mounts() -> list[tuple[str, str, list[str]]]:
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4:
            out.append((parts[1], parts[2], parts[3].split(",")))
    return out


def cgroup2_root() -> Path | None:
    """The cgroup2 mount (unified or hybrid) when a child there would have cgroup.freeze."""
    for mountpoint, fstype, _opts in _mounts():
        if fstype == "cgroup2":
            root = Path(mountpoint)
            probe = root / f"{CGROUP_PREFIX}probe-{os.getpid()}"
            try:
                probe.mkdir(exist_ok=True)
                try:
                    if (probe / "cgroup.freeze").exists():
                        return root
                finally:
                    probe.rmdir()
            except OSError:
                continue
    return None


def cgroup1_freezer_root() -> Path | None:
    for mountpoint, fstype, opts in _mounts():
        if fstype == "cgroup" and "freezer" in opts:
            return Path(mountpoint)
    return None


def detect(preferred: str = "auto") -> tuple[str, Path | None]:
    """Pick the mechanism (and cgroup root); `preferred` forces one, failing clearly if unavailable."""
    if preferred not in ("auto", *MECHANISMS):
        raise ValueError(f"freezer must be auto, {', '.join(MECHANISMS)}; got {preferred!r}")
    if preferred in ("auto", CGROUP2) and (root := cgroup2_root()):
        return CGROUP2, root
    if preferred == CGROUP2:
        raise RuntimeError("no cgroup2 mount whose children have cgroup.freeze")
    if preferred in ("auto", CGROUP1) and (root := cgroup1_freezer_root()):
        return CGROUP1, root
    if preferred == CGROUP1:
        raise RuntimeError("no cgroup v1 freezer mount")
    return SIGNAL, None


def join_argv(cgroup: str | None, argv: list[str]) -> list[str]:
    """Wrap argv so the process enters the box's cgroup before it execs (its children follow)."""
    if cgroup is None:
        return argv
    return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, *argv]


def cgroup_pids(cgroup: str) -> list[int]:
    try:
        text = Path(cgroup, "cgroup.procs").read_text()
    except FileNotFoundError:
        return []
    return [int(p) for p in text.split()]


def netns_pids(netns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, timeout=10)
    return [int(p) for p in out.stdout.split() if p.isdigit()]


def request_freeze(mechanism: str, cgroup: str | None, netns: str, frozen: bool) -> None:
    """Ask for frozen/thawed; cgroup freezers settle asynchronously (see `is_settled`)."""
    if mechanism == CGROUP2:
        Path(cgroup or "", "cgroup.freeze").write_text("1" if frozen else "0")
    elif mechanism == CGROUP1:
        Path(cgroup or "", "freezer.state").write_text("FROZEN" if frozen else "THAWED")
    else:
        sig = signal.SIGSTOP if frozen else signal.SIGCONT
        for pid in netns_pids(netns):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def is_settled(mechanism: str, cgroup: str | None, frozen: bool) -> bool:
    if mechanism == CGROUP2:
        events = Path(cgroup or "", "cgroup.events").read_text()
        return f"frozen {1 if frozen else 0}" in events
    if mechanism == CGROUP1:
        state = Path(cgroup or "", "freezer.state").read_text().strip()
        return state == ("FROZEN" if frozen else "THAWED")
    return True


def is_frozen(mechanism: str, cgroup: str | None, pids: list[int]) -> bool:
    """For tests and status: does the kernel say the box is frozen?"""
    if mechanism in (CGROUP2, CGROUP1):
        return is_settled(mechanism, cgroup, True)
    states = [proc_state(p) for p in pids]
    return bool(states) and all(s == "T" for s in states if s)


def proc_state(pid: int) -> str | None:
    """The one-letter State from /proc/<pid>/status (T = stopped, S = sleeping, ...)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1]
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def kill_all(mechanism: str, cgroup: str | None, netns: str, timeout: float = 5.0) -> list[int]:
    """Thaw and SIGKILL everything in the box, by PID; return what is still alive after `timeout`."""
    if cgroup and Path(cgroup).exists():
        try:
            request_freeze(mechanism, cgroup, netns, False)
        except OSError:
            pass
    deadline = time.monotonic() + timeout
    while True:
        pids = set(netns_pids(netns))
        if cgroup:
            pids.update(cgroup_pids(cgroup))
        pids.discard(os.getpid())
        if not pids or time.monotonic() > deadline:
            return sorted(pids)
        for pid in pids:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.05)


def remove_cgroup(cgroup: str | None, timeout: float = 5.0) -> None:
    if not cgroup:
        return
    deadline = time.monotonic() + timeout
    while Path(cgroup).exists():
        try:
            Path(cgroup).rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
