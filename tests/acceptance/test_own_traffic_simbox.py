"""Our own traffic is never the box's work. On a real simulated box (tools/simbox: real sshd in a network
namespace, asleep after a window of network silence), with the real agent and the real `workroom` command run as
its own process (the app not running):

- `workroom status --live` every 12 s, six times, on an idle box with a 30 s window: every answer says Idle with
  no reason; the agent's own record shows no busy second and no heartbeat sent; the box is asleep within its
  window + 3 s of the last status (each connection moves the provider's idle clock once — unavoidable on a
  network-metered box, and asked for: a plain `status` is a look that reaches no box, tests/acceptance/
  test_look_never_touches.py — never more);
- a connect (a first push, then a reinstall) to an idle box with a 30 s ceiling in ask mode raises no prompt, and
  the box sleeps within its window of the connect ending.
"""

from __future__ import annotations

import json
import os
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

WINDOW = 30.0
WORKROOM = Path(sys.executable).with_name("workroom")


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    with simulated_boxes(tmp_path / "sim", 1, WINDOW) as boxes:
        yield boxes


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """The app's home for this test (the box's agent runs inside the box, which the simulator takes down; this
    computer's, which `workroom status` reaches too, is killed by pid after the test)."""
    yield tmp_path / "wrhome"
    end_local_agents_under(tmp_path / "wrhome")


def workroom(home: Path, *argv: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKROOM_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([str(WORKROOM), *argv], capture_output=True, text=True, timeout=timeout, env=env)


def add_box(home: Path, sim: tuple[Path, dict[str, Any]]) -> None:
    b = sim[1]["boxes"][0]
    added = workroom(home, "hosts", "add", "box1", "--provider", "simbox", "--host", "127.0.0.1",
                     "--port", str(b["ssh_port"]), "--user", b["user"], "--identity", b["client_key"],
                     "--ref", f"health_url={b['health_url']}", "--idle-window", str(int(WINDOW)))
    assert added.returncode == 0, added.stdout + added.stderr
    from workroom.paths import app_paths

    known = app_paths({"WORKROOM_HOME": str(home)}).ensure().known_hosts_file
    with known.open("a") as f:
        f.write(b["host_key_line"] + "\n")


def health(sim: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    import simbox

    return dict(simbox.box_status("box1", home=sim[0]))


def wait_asleep(sim: tuple[Path, dict[str, Any]], limit: float) -> float:
    """Wall time at which the box fell asleep, from the simulator's own record (waited for, bounded)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        box = health(sim)
        if box["state"] == "asleep":
            return float(next(h["at"] for h in reversed(box["history"]) if h["event"] == "sleep"))
        time.sleep(0.2)
    raise AssertionError(f"the box did not sleep within {limit} s: {health(sim)}")


def box_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("box1"))


def agent_record(home: Path, sim: tuple[Path, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The agent's own word after the run: its status and its why-awake record (the box woken by the simulator's
    own hand first, which stands in for a person's ssh; the agent process is the one that ran all along)."""
    import simbox

    if health(sim)["state"] == "asleep":
        simbox.wake("box1", home=sim[0])
    status = json.loads(workroom(home, "status", "--live", "--json").stdout)
    why = workroom(home, "why", "box1", "--since", "30m", "--json")
    return next(h for h in status if h["name"] == "box1"), json.loads(why.stdout)


def test_a_status_every_12_s_is_never_the_boxs_work(sim: Any, home: Path) -> None:
    import simbox

    add_box(home, sim)
    simbox.wake("box1", home=sim[0])
    first = workroom(home, "connect", "box1", "--json")  # the agent installed; then six plain looks
    assert first.returncode == 0, first.stdout + first.stderr
    assert wait_asleep(sim, WINDOW + 10)
    simbox.wake("box1", home=sim[0])
    lines = []
    for _ in range(6):
        started = time.monotonic()
        answer = workroom(home, "status", "--live")
        assert answer.returncode == 0, answer.stdout + answer.stderr
        lines.append(box_line(answer.stdout))
        last_end = time.time()
        time.sleep(max(0.0, 12 - (time.monotonic() - started)))
    for line in lines:
        assert " Idle " in f" {line} " and "traffic" not in line and "hold" not in line, lines
    slept_at = wait_asleep(sim, WINDOW + 20)
    assert slept_at - last_end <= WINDOW + 3, (slept_at - last_end, lines)
    status, why = agent_record(home, sim)
    keep = status["status"]["keep_awake"]
    assert keep["last_sent"] is None and keep.get("sent") in (None, 0), keep  # no heartbeat was ever sent
    awake = {kind: why["totals"].get(kind, 0) for kind in ("busy", "held", "ceiling")}
    assert why["awake_seconds"] == 0 and not any(awake.values()), (awake, why["segments"])  # not one busy second


@pytest.mark.parametrize("how", ["a first push", "a reinstall"])
def test_a_connect_to_an_idle_box_in_ask_mode_raises_no_prompt(sim: Any, home: Path, how: str) -> None:
    import simbox

    add_box(home, sim)
    settings = workroom(home, "settings", "set", "--ceiling", "30", "--ask")
    assert settings.returncode == 0, settings.stdout + settings.stderr
    simbox.wake("box1", home=sim[0])
    if how == "a reinstall":
        assert workroom(home, "connect", "box1").returncode == 0
        removed = workroom(home, "hosts", "remove", "box1", "--uninstall", "--wake")
        assert removed.returncode == 0, removed.stdout + removed.stderr
        add_box(home, sim)
    watch = subprocess.Popen([str(WORKROOM), "connect", "box1", "--watch", "--json"], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "WORKROOM_HOME": str(home)})
    try:
        seen: list[dict[str, Any]] = []
        connected_at = None
        deadline = time.monotonic() + 50  # past the hold and the 30 s ceiling
        while time.monotonic() < deadline:
            line = watch.stdout.readline() if watch.stdout else ""
            if not line:
                break
            seen.append(json.loads(line))
            connected_at = connected_at or time.time()  # the connect ended: its first status is in
            if seen[-1]["connection"] == "asleep":
                break
        assert seen, "no status"
        busy = [s for s in seen if s["status"] and (s["status"]["verdict"] == "BUSY"
                                                    or s["status"]["classifier_verdict"] == "BUSY")]
        prompted = [s for s in seen if s["status"] and s["status"]["prompt_pending"]]
        assert not busy and not prompted, (busy or prompted)[0]
    finally:
        watch.terminate()
        watch.wait(timeout=10)
    slept_at = wait_asleep(sim, WINDOW + 20)
    assert connected_at is not None and slept_at - connected_at <= WINDOW + 3, slept_at - (connected_at or 0)
