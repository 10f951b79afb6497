"""A look is never a touch. With the app not running, every command of `workroom.cli.LOOKS` (`status`, `status
--json`, `hosts list`, ...), run as a person's shell prompt or tmux line would run it, reaches no box, opens no
platform session, starts nothing and leaves no process behind.

Oracles nobody here wrote: the simulator's own record of the box's idle clock and of its sleeps and wakes
(tools/simbox: real sshd in a network namespace, asleep after a window of silence on its tap), strace's record
of every connect(2) the command made, /proc's process list, and the fake `coder`/`gh` record of every command
they were asked (tests/fixtures/fake_platforms.py: the platforms' services cannot run here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.fake_platforms import Box, FakePlatform
from fixtures.procs import end_local_agents_under, left_behind, our_processes
from fixtures.simboxes import Sim, simulated_boxes
from workroom import cli

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

WINDOW = 40.0
EVERY = 15.0
LOOP_SECONDS = 100.0
WORKROOM = Path(sys.executable).with_name("workroom")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "wrhome"
    end_local_agents_under(tmp_path / "wrhome")


def workroom(home: Path, *argv: str, trace: Path | None = None,
             timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKROOM_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    prefix = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace)] if trace is not None else []
    return subprocess.run([*prefix, str(WORKROOM), *argv], capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


def connects(trace: Path) -> list[str]:
    return [line for line in trace.read_text().splitlines() if "connect(" in line]


def health(sim: Sim) -> dict[str, Any]:
    import simbox

    return dict(simbox.box_status("box1", home=sim[0]))


@pytest.mark.root
@pytest.mark.timeout(400)
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_looks_every_15_s_never_keep_an_idle_box_up(tmp_path: Path, home: Path) -> None:
    with simulated_boxes(tmp_path / "sim", 1, WINDOW) as sim:
        b = sim[1]["boxes"][0]
        added = workroom(home, "hosts", "add", "box1", "--provider", "simbox", "--host", "127.0.0.1", "--port",
                         str(b["ssh_port"]), "--user", b["user"], "--identity", b["client_key"],
                         "--ref", f"health_url={b['health_url']}", "--idle-window", str(int(WINDOW)))
        assert added.returncode == 0, added.stderr
        from workroom.paths import app_paths

        with app_paths({"WORKROOM_HOME": str(home)}).ensure().known_hosts_file.open("a") as known:
            known.write(b["host_key_line"] + "\n")
        import simbox

        simbox.wake("box1", home=sim[0])
        connected = workroom(home, "connect", "box1")  # once, so that its verdict is known
        assert connected.returncode == 0, connected.stdout + connected.stderr
        simbox.sleep("box1", home=sim[0])
        woke = float(simbox.wake("box1", home=sim[0])["event"]["at"])  # the simulator's hand, not ours
        started = time.monotonic()
        box_port = f"htons({b['ssh_port']})"
        rounds = 0
        lines: list[str] = []
        while time.monotonic() - started < LOOP_SECONDS:
            round_start = time.monotonic()
            for argv in cli.LOOKS:
                before_idle = health(sim)
                before = our_processes(home)
                trace = tmp_path / f"look-{rounds}-{'-'.join(argv)}.strace"
                done = workroom(home, *argv, trace=trace)
                after_idle = health(sim)
                assert done.returncode in (0, 1), (argv, done.stdout, done.stderr)  # app status: 1, not running
                assert "Traceback" not in done.stderr, done.stderr
                assert left_behind(home, before) == {}, argv
                assert not [c for c in connects(trace) if box_port in c], (argv, connects(trace))
                # No reset of its idle clock by us (the first seconds after a thaw have the box's own chatter).
                if before_idle["state"] == after_idle["state"] == "awake" and before_idle["idle_for_s"] > 5:
                    assert after_idle["idle_for_s"] >= before_idle["idle_for_s"], (argv, before_idle, after_idle)
                if argv == ("status",):
                    lines.append(next(line for line in done.stdout.splitlines() if line.startswith("box1 ")))
                if argv == ("status", "--json"):
                    row = next(h for h in json.loads(done.stdout) if h["name"] == "box1")
                    assert row["live"] is False and row["last_known"]["verdict"] == "idle", row
            rounds += 1
            time.sleep(max(0.0, EVERY - (time.monotonic() - round_start)))
        history = health(sim)["history"]
        slept = [h for h in history if h["event"] == "sleep" and h["at"] > woke]
        assert slept, history
        assert slept[0]["at"] - woke <= WINDOW + 5, (slept[0]["at"] - woke, history)
        assert [h for h in history if h["event"] == "wake" and h["at"] > woke] == [], history  # woken by nobody
        assert rounds >= 6
        # Every line names the box with what is known and how long ago; once asleep, that it is.
        said = r"box1 +(Idle \(seen (just now|.+ ago)\)|Asleep \(since \d\d:\d\d\); last known idle)"
        assert all(re.search(said, line) for line in lines), lines
        assert "asleep in about" in lines[0] and "Asleep" in lines[-1], lines


def test_looks_at_running_platform_boxes_open_no_session(home: Path, fake_platform: FakePlatform) -> None:
    """A running, idle Coder workspace and codespace (stand-ins: the services cannot run here; an open session or
    tunnel is activity there): three rounds of every look read the platforms' lists only."""
    fake_platform.add(Box(name="ws1", platform="coder", state="running", ttl=3600.0, bump=3600.0,
                          deadline=time.time() + 3600.0))
    fake_platform.add(Box(name="cs1", platform="codespaces", state="Available", ttl=1800.0))
    for name, kind in (("ws1", "coder"), ("cs1", "codespaces")):
        assert workroom(home, "hosts", "add", name, "--provider", kind, "--ref", name).returncode == 0
    deadline = fake_platform.box("ws1")["deadline"]
    for _ in range(3):
        for argv in cli.LOOKS:
            before = our_processes(home)
            done = workroom(home, *argv)
            assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (argv, done.stderr)
            assert left_behind(home, before) == {}, argv
    status = workroom(home, "status")
    assert re.search(r"ws1 +Nothing known yet · by the platform's clock: stops in ", status.stdout), status.stdout
    sessions = [c["argv"] for c in fake_platform.calls if "ssh" in c["argv"] or "--stdio" in c["argv"]]
    assert sessions == [], sessions
    assert [e for e in fake_platform.events if e["event"] in ("activity", "bump", "start", "session_open")] == []
    assert fake_platform.box("ws1")["deadline"] == deadline  # nothing of ours moved its clock


def test_status_into_a_closed_pipe_ends_quietly(home: Path) -> None:
    for n in range(30):
        assert workroom(home, "hosts", "add", f"h{n}", "--provider", "ssh", "--host", "127.0.0.1").returncode == 0
    env = {**os.environ, "WORKROOM_HOME": str(home)}
    for argv in (["status"], ["status", "--json"], ["hosts", "list"], ["settings", "get"], ["--help"]):
        piped = subprocess.run(["bash", "-c", f'"{WORKROOM}" {" ".join(argv)} | head -c 1 >/dev/null; '
                                              'echo "${PIPESTATUS[0]}"'],
                               capture_output=True, text=True, env=env, timeout=60)
        assert piped.stdout.strip() in ("0", "141"), (argv, piped.stdout, piped.stderr)
        assert "Traceback" not in piped.stderr and "Error" not in piped.stderr, (argv, piped.stderr)


@pytest.mark.linux(reason="reads /proc")
def test_a_connect_to_this_computer_leaves_only_its_agent_and_says_so(home: Path) -> None:
    listed = workroom(home, "hosts", "list", "--json")
    name = next(h["name"] for h in json.loads(listed.stdout) if h["provider"] == "local")
    before = our_processes(home)
    looked = workroom(home, "status", "--live")  # a live look reads this computer only where its agent runs
    assert looked.returncode == 0 and "its agent is not running" in looked.stdout, looked.stdout
    assert left_behind(home, before) == {}
    done = workroom(home, "connect", name)
    assert done.returncode == 0, done.stdout + done.stderr
    left = left_behind(home, before)
    assert left and all("wr-agent" in cmd or "wr_agent" in cmd for cmd in left.values()), left
    assert all(" serve " in cmd for cmd in left.values()), left
    named = re.search(r"this computer's agent \(process (\d+)\) keeps running", done.stdout)
    assert named is not None and int(named.group(1)) in left, (done.stdout, left)
    quit_words = workroom(home, "app", "quit")
    assert f"This computer's agent (process {named.group(1)}) keeps running" in quit_words.stdout, quit_words.stdout
    assert f"`workroom hosts remove {name} --uninstall`" in quit_words.stdout
    removed = workroom(home, "hosts", "remove", name, "--uninstall")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert left_behind(home, before) == {}  # the way the words named stops it
