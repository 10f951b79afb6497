"""With the app running, the command line asks the app and never the box: two asleep simulated boxes, the real app
as its own process (`python -m workroom.ui.main`, offscreen), and `workroom status`, `why`, `keep`, `let-sleep`
and `exclusions` (words and --json) run again and again for two minutes, each a real process under strace. The
simulator records no wake and no connection at all, and the only socket any command opens is the app's.

Real parts: the simulator (tools/simbox: real sshd in a network namespace, frozen when asleep, every wake and
connection recorded), the real app and its engine, the real CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import cycle
from pathlib import Path

import pytest
from fixtures.procs import stop_process
from fixtures.simboxes import Sim, simulated_boxes
from gui_helpers import kill_agents_under
from test_no_wake_simbox import box
from workroom.core.errors import ExitCode

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.root, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 30.0
LOOP_SECONDS = 120.0
MAX_COMMANDS = 5000
"""The loop's bound in count, beside its bound in time."""
WORKROOM = [sys.executable, "-m", "workroom.cli"]
ASLEEP, OK = {ExitCode.ASLEEP}, {ExitCode.OK}
COMMANDS: list[tuple[list[str], set[int]]] = [
    (["status"], OK), (["status", "--json"], OK), (["why", "box1"], ASLEEP), (["why", "box2", "--json"], ASLEEP),
    (["keep", "box1"], ASLEEP), (["let-sleep", "box2"], OK), (["let-sleep", "box1", "--json"], OK),
    (["exclusions", "box1"], ASLEEP), (["exclusions", "box2", "--add", "watch", "--json"], ASLEEP),
]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with simulated_boxes(tmp_path_factory.mktemp("sim"), 2, WINDOW) as boxes:
        yield boxes


def seen_by_the_simulator(sim: Sim) -> dict[str, tuple[int, int]]:
    """Per box: (wakes recorded, connections open now)."""
    import simbox

    out = {}
    for name in ("box1", "box2"):
        state = simbox.box_status(name, home=sim[0])
        out[name] = (sum(1 for h in state["history"] if h["event"] == "wake"), state["open_connections"])
    return out


def workroom(env: dict[str, str], *argv: str, strace: Path | None = None) -> subprocess.CompletedProcess[str]:
    traced = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(strace)] if strace is not None else []
    return subprocess.run([*traced, *WORKROOM, *argv], capture_output=True, text=True, timeout=90, env=env,
                          stdin=subprocess.DEVNULL)


def said_no_at_a_terminal(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """The command with a terminal as its stdin, "n" typed ahead."""
    import pty

    leader, follower = pty.openpty()
    try:
        os.write(leader, b"n\n")
        return subprocess.run([*WORKROOM, *argv], capture_output=True, text=True, timeout=90, env=env,
                              stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)


@pytest.mark.timeout(420)
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_two_minutes_of_commands_through_the_app_never_reach_an_asleep_box(sim: Sim, tmp_path: Path) -> None:
    import simbox

    home = tmp_path / "home"
    env = dict(os.environ, WORKROOM_HOME=str(home), QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join([str(ROOT / "app"), str(ROOT / "agent_bundle")]))
    (home / "config").mkdir(parents=True)
    (home / "config" / "known_hosts").write_text("".join(box(sim, n)["host_key_line"] + "\n" for n in ("box1", "box2")))
    for name in ("box1", "box2"):
        info = box(sim, name)
        if simbox.box_status(name, home=sim[0])["state"] != "asleep":
            simbox.sleep(name, home=sim[0])
        added = workroom(env, "hosts", "add", name, "--provider", "simbox", "--host", "127.0.0.1", "--port",
                         str(info["ssh_port"]), "--user", info["user"], "--identity", info["client_key"],
                         "--idle-window", str(WINDOW), "--ref", info["health_url"])
        assert added.returncode == 0, added.stderr
    before = seen_by_the_simulator(sim)
    assert all(open_now == 0 for _, open_now in before.values()), before
    app = subprocess.Popen([sys.executable, "-m", "workroom.ui.main"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while workroom(env, "app", "status").returncode != 0:
            assert app.poll() is None and time.monotonic() < deadline, "the app did not start serving"
            time.sleep(0.5)
        deadline = time.monotonic() + 60
        while True:  # the app has read both boxes' state (without waking them)
            states = {h["name"]: h["connection"] for h in json.loads(workroom(env, "status", "--json").stdout)}
            if states.get("box1") == states.get("box2") == "asleep":
                break
            assert time.monotonic() < deadline, states
            time.sleep(0.5)
        started, ran = time.monotonic(), 0
        for argv, codes in cycle(COMMANDS):
            if time.monotonic() - started > LOOP_SECONDS or ran >= MAX_COMMANDS:
                break
            trace = tmp_path / "connect.strace"
            done = workroom(env, *argv, strace=trace)
            ran += 1
            assert done.returncode in codes, (argv, done.returncode, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr, done.stderr
            if "--json" in argv:
                json.loads(done.stdout)
            calls = [line for line in trace.read_text().splitlines() if "connect(" in line]
            assert calls and all("AF_UNIX" in line and "app.sock" in line for line in calls), (argv, calls)
            assert seen_by_the_simulator(sim) == before, (argv, seen_by_the_simulator(sim))
        print(f"{ran} commands in {time.monotonic() - started:.0f} s through the app")
        assert ran >= len(COMMANDS) * 2, f"only {ran} commands in {LOOP_SECONDS:.0f} s"
        # Uninstalling wakes the box: at a terminal the app asks through the command, and "n" wakes nothing.
        asked = said_no_at_a_terminal(env, "hosts", "remove", "box1", "--uninstall")
        assert asked.returncode == ExitCode.ASLEEP, (asked.stdout, asked.stderr)
        assert "uninstalling its agent wakes it. Wake it and uninstall? [y/N]" in asked.stdout, asked.stdout
        assert "--uninstall --wake" in asked.stdout and seen_by_the_simulator(sim) == before
        assert "box1" in workroom(env, "hosts", "list").stdout
        quit_ = workroom(env, "app", "quit")
        assert quit_.returncode == 0, quit_.stderr
        assert app.wait(timeout=30) == 0
    finally:
        stop_process(app, 20)
        kill_agents_under(home)
    assert seen_by_the_simulator(sim) == before
