"""`up` and `down` through the real entry point: two boxes come up reachable, and nothing is left after."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest
from simbox import netbox
from simbox.state import read_state
from simbox_helpers import home_of, ssh_client, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.root]

APP = str(Path(__file__).resolve().parents[3] / "app")


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKROOM_HOME": str(home), "PYTHONPATH": APP}
    return subprocess.run([sys.executable, "-m", "simbox", *args], capture_output=True, text=True,
                          env=env, timeout=90)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _running(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def test_up_two_boxes_then_down_leaves_nothing_behind(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the simbox creates network namespaces, cgroups and users")
    up = _cli(tmp_path, "up", "--boxes", "2", "--idle-window", "3", "--json")
    try:
        assert up.returncode == 0, up.stderr
        info = json.loads(up.stdout)
        assert [b["name"] for b in info["boxes"]] == ["box1", "box2"]
        for b in info["boxes"]:
            assert b["ssh_host"] == "127.0.0.1" and b["ssh_port"] > 0 and b["idle_window_s"] == 3.0
            assert b["host_key_line"].startswith(f"[127.0.0.1]:{b['ssh_port']} ssh-ed25519 ")
            assert Path(b["client_key"]).is_file()
            assert b["health_url"].endswith(f"/v1/boxes/{b['name']}")
        state = read_state(tmp_path / "state" / "simbox" / "state.json")
        assert state is not None
        again = _cli(tmp_path, "up", "--boxes", "1", "--idle-window", "3")
        assert again.returncode == 1 and "already up" in again.stderr
        status = _cli(tmp_path, "status", "--json")
        assert status.returncode == 0, status.stderr
        assert {b["name"]: b["state"] for b in json.loads(status.stdout)["boxes"]} == \
            {"box1": "awake", "box2": "awake"}
        # both boxes really answer SSH, as their own user, alone in their PID namespace
        for rec in state.boxes:
            client = ssh_client(state, rec.name)
            try:
                _, out, _ = client.exec_command("id -un; cat /proc/1/comm; ip -4 route show default", timeout=10)
                user, comm, route = out.read().decode().splitlines()
            finally:
                client.close()
            assert user == rec.user and comm == "sshd" and f"via {rec.host_addr}" in route
            home = Path(rec.home)
            assert sorted(p.name for p in home.iterdir()) == [".ssh"]
            assert pwd.getpwnam(rec.user).pw_shell == "/bin/sh"
        pids = [state.daemon_pid] + [r.init_pid for r in state.boxes if r.init_pid]
        pids += [netbox.sshd_pid(r) for r in state.boxes]
    finally:
        down = _cli(tmp_path, "down")
    assert down.returncode == 0, down.stderr
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=10).stdout
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    for rec in state.boxes:
        assert rec.netns not in netns
        assert rec.host_if not in links
        assert not _user_exists(rec.user)
        assert not Path(rec.home).exists()
        assert rec.cgroup is None or not Path(rec.cgroup).exists()
    # an orphaned daemon is reaped by PID 1 a moment later; until then it may be a zombie (dead)
    assert wait_for(lambda: not [p for p in pids if _running(p)], 5), [p for p in pids if _running(p)]
    assert not (tmp_path / "state" / "simbox" / "state.json").exists()
    assert not Path(state.client_key).exists()
    status = _cli(tmp_path, "status")
    assert status.returncode == 3 and "not up" in status.stderr
    assert _cli(tmp_path, "down").returncode == 0  # down twice is fine


def test_down_cleans_up_after_a_killed_daemon(make_simbox, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A daemon that dies without cleaning up (SIGKILL) leaves a state file; `down` removes everything."""
    import simbox

    state = make_simbox(boxes=1, window=3.0)
    home = home_of(state)
    os.kill(state.daemon_pid, 9)
    rec = state.boxes[0]
    report = simbox.down(home=home)
    assert report["was_up"] and not report["problems"]
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    assert rec.netns not in netns and not _user_exists(rec.user)
    assert rec.init_pid and wait_for(lambda: not _running(rec.init_pid), 5)
