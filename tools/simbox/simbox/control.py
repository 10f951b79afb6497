"""The simbox's public operations: up, status, down, wake, sleep (the CLI and the app call these).

`up` starts the daemon in the background and returns once every box answers SSH; `down` stops it by PID
and then removes, idempotently, everything the state file names, even after a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import workroom

import simbox
from simbox import netbox
from simbox.state import BoxRecord, SimboxError, SimboxState, read_state, simbox_dir, state_path

UP_TIMEOUT = 60.0
DOWN_TIMEOUT = 20.0
HTTP_TIMEOUT = 5.0
MAX_BOXES = 32


def require_root() -> None:
    if not sys.platform.startswith("linux"):
        raise SimboxError("simbox needs Linux (network namespaces, cgroups)")
    if os.geteuid() != 0:
        raise SimboxError("simbox needs root: it creates network namespaces, veth pairs, cgroups and "
                          "users (run it with sudo)")


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (a zombie child is reaped here)."""
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\nState:\tZ" not in status


def _is_our_daemon(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return False
    return b"simbox" in cmdline and b"_daemon" in cmdline


def load(home: Path | None = None) -> SimboxState | None:
    return read_state(state_path(home))


def up(boxes: int, idle_window: float, *, ipv6: bool = False, freezer: str = "auto",
       metering: str = "network", guest_port: int = 8080, tick: float = 1.0, home: Path | None = None,
       timeout: float = UP_TIMEOUT) -> SimboxState:
    """Start the daemon with `boxes` boxes; return the state once all of them answer on port 22.

    metering="network" is the vmd rule (tap bytes + proxied connections); "requests" is the request meter
    (only requests through the per-box HTTP proxy to `guest_port` inside the box count). See docs/simbox.md.
    """
    require_root()
    if metering not in ("network", "requests"):
        raise SimboxError(f"--metering must be network or requests, got {metering!r}")
    if not 1 <= guest_port <= 65535 or guest_port == 22:
        raise SimboxError(f"--guest-port must be a TCP port other than 22, got {guest_port}")
    if not 1 <= boxes <= MAX_BOXES:
        raise SimboxError(f"--boxes must be between 1 and {MAX_BOXES}, got {boxes}")
    if not 0 < idle_window <= 86400:
        raise SimboxError(f"--idle-window must be > 0 and at most a day (seconds), got {idle_window}")
    if not 0 < tick <= 60:
        raise SimboxError(f"tick must be in (0, 60] seconds, got {tick}")
    base = simbox_dir(home)
    existing = read_state(base / "state.json")
    if existing is not None:
        if _alive(existing.daemon_pid) and _is_our_daemon(existing.daemon_pid):
            raise SimboxError(f"simbox is already up (daemon pid {existing.daemon_pid}, health "
                              f"{existing.health_url}); run `down` first")
        cleanup(existing)  # a daemon that died: finish its cleanup before starting afresh
        (base / "state.json").unlink(missing_ok=True)
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)
    log_path = base / "daemon.log"
    env = dict(os.environ)
    # The daemon imports this package and the app's `workroom.paths`: pass both on, installed or not.
    roots = {str(Path(mod.__file__ or "").resolve().parent.parent) for mod in (workroom, simbox)}
    env["PYTHONPATH"] = os.pathsep.join([*sorted(roots), *filter(None, [env.get("PYTHONPATH")])])
    argv = [sys.executable, "-m", "simbox", "_daemon", "--boxes", str(boxes),
            "--idle-window", str(idle_window), "--dir", str(base), "--freezer", freezer, "--tick", str(tick),
            "--metering", metering, "--guest-port", str(guest_port)]
    if ipv6:
        argv.append("--ipv6-on")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                start_new_session=True, cwd="/")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _read_quiet(base / "state.json")
        if state is not None and state.daemon_pid == proc.pid:
            if state.ready:
                return state
            if state.error:
                _reap(proc)
                cleanup(state)
                (base / "state.json").unlink(missing_ok=True)
                raise SimboxError(f"simbox daemon failed: {state.error}\n{_tail(log_path)}")
        if proc.poll() is not None:
            if state is not None:
                cleanup(state)
                (base / "state.json").unlink(missing_ok=True)
            raise SimboxError(f"simbox daemon exited with {proc.returncode}\n{_tail(log_path)}")
        time.sleep(0.05)
    proc.terminate()
    _reap(proc)
    state = _read_quiet(base / "state.json")
    if state is not None:
        cleanup(state)
        (base / "state.json").unlink(missing_ok=True)
    raise SimboxError(f"simbox did not come up within {timeout} s\n{_tail(log_path)}")


def _read_quiet(path: Path) -> SimboxState | None:
    try:
        return read_state(path)
    except SimboxError:
        return None  # mid-write by the daemon is impossible (atomic), but be patient anyway


def _reap(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(timeout=DOWN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "daemon log:\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""


def cleanup(state: SimboxState) -> list[str]:
    """Remove everything the state names (idempotent); return what could not be removed."""
    problems = []
    for rec in state.boxes:
        problems += netbox.destroy(rec)
    return problems


def down(home: Path | None = None, timeout: float = DOWN_TIMEOUT) -> dict[str, Any]:
    """Stop the daemon (SIGTERM by PID, SIGKILL after `timeout`) and remove every box's resources."""
    require_root()
    base = simbox_dir(home)
    state = read_state(base / "state.json")
    if state is None:
        return {"was_up": False, "problems": []}
    pid = state.daemon_pid
    killed = False
    if _alive(pid) and _is_our_daemon(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            killed = True
            deadline = time.monotonic() + 5
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
    problems = cleanup(state)
    if not problems:
        (base / "state.json").unlink(missing_ok=True)
        for p in (Path(state.client_key), Path(state.client_key + ".pub")):
            p.unlink(missing_ok=True)
        for rec in state.boxes:
            _rmtree(Path(rec.dir))
        _rmtree(base / "boxes")
    return {"was_up": True, "daemon_pid": pid, "daemon_killed": killed, "problems": problems}


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _http(state: SimboxState, method: str, path: str) -> dict[str, Any]:
    if not state.health_url:
        raise SimboxError("simbox is starting (no health endpoint yet)")
    req = urllib.request.Request(state.health_url + path, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:
            data: dict[str, Any] = json.loads(resp.read())
            return data
    except urllib.error.HTTPError as exc:
        raise SimboxError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise SimboxError(f"health endpoint {state.health_url} not answering ({exc}); daemon pid "
                          f"{state.daemon_pid} {'alive' if _alive(state.daemon_pid) else 'gone'}; "
                          f"run `down` to clean up") from exc


def _need_state(home: Path | None) -> SimboxState:
    state = load(home)
    if state is None:
        raise SimboxError("simbox is not up (no state file); run `up` first")
    return state


def status(home: Path | None = None) -> dict[str, Any]:
    """The health endpoint's view of every box (never wakes one)."""
    return _http(_need_state(home), "GET", "/v1/boxes")


def box_status(name: str, home: Path | None = None) -> dict[str, Any]:
    return _http(_need_state(home), "GET", f"/v1/boxes/{name}")


def wake(name: str, home: Path | None = None) -> dict[str, Any]:
    return _http(_need_state(home), "POST", f"/v1/boxes/{name}/wake")


def sleep(name: str, home: Path | None = None) -> dict[str, Any]:
    return _http(_need_state(home), "POST", f"/v1/boxes/{name}/sleep")


def connection_info(state: SimboxState) -> dict[str, Any]:
    """What a client needs, per box: the `up --json` document."""
    def one(b: BoxRecord) -> dict[str, Any]:
        return {"name": b.name, "ssh_host": "127.0.0.1", "ssh_port": b.proxy_port, "user": b.user,
                "client_key": state.client_key, "host_key_line": b.host_key_line,
                "health_url": f"{state.health_url}/v1/boxes/{b.name}", "idle_window_s": b.idle_window_s,
                "freezer": b.freezer, "netns": b.netns, "host_if": b.host_if, "box_addr": b.box_addr,
                "gateway": b.host_addr, "metering": state.metering,
                "http_url": f"http://127.0.0.1:{b.http_port}" if b.http_port else None,
                "guest_port": b.guest_port}

    return {"daemon_pid": state.daemon_pid, "health_url": state.health_url, "idle_window_s": state.idle_window_s,
            "ipv6": state.ipv6, "freezer": state.freezer, "metering": state.metering,
            "client_key": state.client_key,
            "boxes": [one(b) for b in state.boxes]}


def exec_argv(name: str, argv: list[str], *, as_user: bool = True, home: Path | None = None) -> list[str]:
    """argv running a command inside box `name` (its cgroup, netns, PID namespace), as its user."""
    return netbox.exec_argv(_need_state(home).box(name), argv, as_user=as_user)
