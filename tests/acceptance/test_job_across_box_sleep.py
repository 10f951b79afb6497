"""A job survives its box's sleep and wake in the agent's eyes. On a real simulated box (tools/simbox: the box's
processes frozen by the kernel's cgroup freezer while it sleeps, thawed when it wakes), with the real agent
installed by the real `workroom connect`: `sleep 400 && build` running when the box goes to sleep (an unanswered
prompt let it sleep, say) is still a job after the wake — its sleep restarted with its time left — and the agent
says BUSY, never IDLE, after the wake's short resume mask. Before the fix the agent read the freeze's trap and the
thaw's restart as the sleeper's own wakes (a daemon's next tick, never work) and said IDLE 6 s after the wake, so
the box slept again under the job. Twice, since the agent may or may not tick once more after the job is frozen.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.procs import end_local_agents_under
from fixtures.simboxes import simulated_boxes

pytestmark = [pytest.mark.acceptance, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(400)]

WINDOW = 300.0  # the box never sleeps by itself here: the test puts it to sleep
ASLEEP_SECONDS = 36.0  # longer than the agent's tick gap (30 s)
WORKROOM = Path(sys.executable).with_name("workroom")


def agent_status(sim: Any) -> dict[str, Any]:
    """The agent's own status, asked inside the box over its Unix socket (nothing from this computer's app)."""
    import simbox

    home = Path(pwd.getpwnam(sim[1]["boxes"][0]["user"]).pw_dir)
    argv = simbox.exec_argv("box1", ["python3", str(home / ".local/share/wr-agent/wr-agent.pyz"), "status",
                                     "--socket", str(home / ".local/state/wr-agent/agent.sock")], home=sim[0])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    data = json.loads(out.stdout)
    return dict(data.get("status", data))


@contextlib.contextmanager
def box_with_a_sleeping_job(tmp_path: Path) -> Iterator[Any]:
    """One simulated box connected by the real `workroom connect` (its real agent installed), running
    `sleep 400 && echo build` which the agent already calls BUSY; yields the simulator's handle."""
    import simbox

    home = tmp_path / "wrhome"
    env = {**os.environ, "WORKROOM_HOME": str(home)}
    with simulated_boxes(tmp_path / "sim", 1, WINDOW) as sim:
        b = sim[1]["boxes"][0]
        added = subprocess.run([str(WORKROOM), "hosts", "add", "box1", "--provider", "simbox", "--host", "127.0.0.1",
                                "--port", str(b["ssh_port"]), "--user", b["user"], "--identity", b["client_key"],
                                "--ref", f"health_url={b['health_url']}", "--idle-window", str(int(WINDOW))],
                               env=env, capture_output=True, text=True, timeout=60)
        assert added.returncode == 0, added.stderr
        from workroom.paths import app_paths

        app_paths({"WORKROOM_HOME": str(home)}).ensure().known_hosts_file.write_text(b["host_key_line"] + "\n")
        connected = subprocess.run([str(WORKROOM), "connect", "box1"], env=env, capture_output=True, text=True,
                                   timeout=120)
        assert connected.returncode == 0, connected.stdout + connected.stderr
        job = subprocess.Popen(simbox.exec_argv("box1", ["sh", "-c", "sleep 400 && echo build"], home=sim[0]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while agent_status(sim)["classifier_verdict"] != "BUSY":
                assert time.monotonic() < deadline, agent_status(sim)
                time.sleep(1)
            yield sim
        finally:
            job.kill()
            job.wait(timeout=10)
    end_local_agents_under(home)


def test_a_sleeping_job_is_busy_again_after_its_box_sleeps_and_wakes(tmp_path: Path) -> None:
    import simbox

    with box_with_a_sleeping_job(tmp_path) as sim:
        for cycle in range(2):
            simbox.sleep("box1", home=sim[0])
            time.sleep(ASLEEP_SECONDS)
            simbox.wake("box1", home=sim[0])
            woke = time.monotonic()
            seen = []
            while time.monotonic() - woke < 15:
                status = agent_status(sim)
                seen.append((round(time.monotonic() - woke, 1), status["classifier_verdict"],
                             [r.get("kind") if isinstance(r, dict) else r for r in status.get("busy_reasons", [])]))
                time.sleep(1)
            assert all(verdict == "BUSY" for _, verdict, _ in seen), (cycle, seen)
            assert any("sleep" in json.dumps(reasons) for t, _, reasons in seen if t > 8), (cycle, seen)


def box_run(sim: Any, argv: list[str]) -> str:
    import simbox

    out = subprocess.run(simbox.exec_argv("box1", argv, home=sim[0]), capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


def test_an_agent_replaced_after_the_wake_knows_the_sleeping_job(tmp_path: Path) -> None:
    """The same job, the box slept and woke, and then the agent was killed (a frozen agent is replaced, not handed
    off): its supervisor starts a fresh one, which sees the restarted sleep's wchan `do_syscall_64` and no timer.
    It goes on from what the old one kept in its state folder (by pid and start time): the same sleep, BUSY from its
    first answer on. Before, the fresh agent called the job idle and the box slept under it."""
    import simbox

    with box_with_a_sleeping_job(tmp_path) as sim:
        time.sleep(7)  # the agent keeps what it knows when it changes, looked at every 5 s
        simbox.sleep("box1", home=sim[0])
        time.sleep(ASLEEP_SECONDS)
        simbox.wake("box1", home=sim[0])
        time.sleep(4)
        old = box_run(sim, ["pgrep", "-x", "wr-agent"])
        assert old, "no agent running in the box"
        box_run(sim, ["pkill", "-KILL", "-x", "wr-agent"])
        deadline = time.monotonic() + 30
        while box_run(sim, ["pgrep", "-x", "wr-agent"]) in ("", old):
            assert time.monotonic() < deadline, "the supervisor did not start a fresh agent"
            time.sleep(0.5)
        started = time.monotonic()
        seen = []
        while time.monotonic() - started < 12:
            try:
                status = agent_status(sim)
            except (ValueError, subprocess.TimeoutExpired):
                time.sleep(0.3)  # not listening yet
                continue
            seen.append((round(time.monotonic() - started, 1), status["classifier_verdict"],
                         json.dumps(status.get("structured_reasons", []))))
            time.sleep(1)
        assert len(seen) >= 5, seen
        assert all(verdict == "BUSY" for _, verdict, _ in seen[1:]), seen  # the first may come before a tick
        assert any('"sleep"' in reasons for _, _, reasons in seen), seen
