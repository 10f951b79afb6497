"""The app's link under hostile clients, against the real app process (`ui.main.run_app`, offscreen, as `workroom-app`
runs it; docs/app_link.md, "Bounds"): 500 clients at once (idle ones, garbage, real looks), one that never reads,
one that sends a 4 GiB length, one that leaves the keyring's question unanswered. Meanwhile `workroom status`
through the link, timed in a process of its own, stays answered (p99 of the looks during the flood within 100 ms
where the machine is not shared, 300 ms under CI's other tiers), the refusals are said (in the answer and once in
the app's log), the app's memory grows by less than 20 MB and its descriptors come back once the clients are gone.
tests/unit/test_app_link_bounds.py holds each bound on the same socket with stand-in commands; this is the app."""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fixtures.link_flood import answer_of, flood_client
from fixtures.procs import stop_process
from gui_helpers import kill_agents_under, poll_until
from workroom import app_link, single_instance
from workroom.paths import app_paths

pytestmark = [pytest.mark.gui, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(str(path))
    return sock


@pytest.mark.timeout(240)
def test_the_real_apps_link_holds_under_a_flood_and_keeps_answering(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WORKROOM_HOME=str(home), WORKROOM_LOGIN_ENV="0",
               PYTHONPATH=os.pathsep.join(str(ROOT / p) for p in ("app", "agent_bundle")))
    monkeypatch.setenv("WORKROOM_HOME", str(home))  # this process's looks go to that app's link
    log_dir = tmp_path / "app-out"
    log_dir.mkdir()
    with open(log_dir / "stderr", "wb") as err:
        app = subprocess.Popen([sys.executable, "-c", "from workroom.ui.main import run_app; exit(run_app())"],
                               env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path)
    path = single_instance.instance_folder(app_paths({"WORKROOM_HOME": str(home)})) / single_instance.SOCKET_NAME
    look = [sys.executable, "-m", "workroom.cli", "status", "--json"]
    try:
        poll_until("the app answering through its link", lambda: b'"connection": "live"' in subprocess.run(
            look, env=env, capture_output=True, timeout=30).stdout, [app], timeout=90)
        rss0, fds0 = _rss_mb(app.pid), _fds(app.pid)

        # The ones that stay: never reads what it asked for; a question (the keyring's secret) never answered.
        never_reads = _connect(path)
        never_reads.sendall(app_link.request(["status", "--json"]))
        asks = _connect(path)
        asks.sendall(app_link.request(["secret", "set", "--password", "dev@box.example:22"]))
        asked = b""
        while b"Password for" not in asked:  # the hello, then the question; nobody answers it
            chunk = asks.recv(65536)
            assert chunk, asked
            asked += chunk

        four_gib = b"%s 1 0.1.0 %d\n" % (app_link.HEADER, 4 << 30)
        assert b"longer than the app takes" in answer_of(path, four_gib)
        assert answer_of(path, b"\x00\xff garbage \x01\n") == b""

        # The person's `workroom status` while the flood runs, in a process of its own (the flood's 500 threads
        # here would otherwise share its interpreter lock): answered, or BUSY at once (past MAX_CLIENTS: the
        # command then looks without the app, reaching no box).
        times, stop = tmp_path / "looks", tmp_path / "stop-looking"
        with open(log_dir / "looks.out", "wb") as looks_out:
            timer = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fixtures" / "look_timer.py"), str(times),
                                      str(stop)], env=env, stdout=looks_out, stderr=subprocess.STDOUT)
        try:
            poll_until("the first look timed", lambda: times.exists() and times.stat().st_size > 0, [app, timer],
                       timeout=30)
            with ThreadPoolExecutor(max_workers=500) as pool:
                results = []
                for _ in range(3):  # three waves of 500: the flood lasts long enough for the looks to be timed in it
                    results += list(pool.map(lambda i: flood_client(path, i), range(500)))
        finally:
            stop.touch()
            assert timer.wait(30) == 0
        commands = [r for i, r in enumerate(results) if i % 500 % 3 == 2]
        assert all(r in (0, app_link.EXIT_BUSY, -1) for r in commands) and commands.count(0) > 0
        timed = [line.split() for line in times.read_text().splitlines()]
        looks_ms = [float(ms) for code, ms in timed if code == "0"]
        busy_ms = [float(ms) for code, ms in timed if code == "None"]
        failed_looks = [code for code, _ in timed if code not in ("0", "None")]
        assert len(looks_ms) >= 10 and not failed_looks, (looks_ms, busy_ms, failed_looks)
        assert max(busy_ms, default=0) < 1000, busy_ms  # told at once, never queued
        # The socket is the link's thread's (single_instance): the flood's connections, bounds and frames never
        # queue on the app's loop, where only the commands run. The goal, p99 <= 100 ms, on a machine of
        # its own; under CI's other tiers on the same 2 cores, 300 ms.
        bound = 300 if os.environ.get("CI") else 100
        p99 = statistics.quantiles(looks_ms, n=100, method="inclusive")[98] if len(looks_ms) > 1 else looks_ms[0]
        print(f"looks through the app during the flood: {len(looks_ms)}, median {statistics.median(looks_ms):.1f} "
              f"ms, p99 {p99:.1f} ms; answered busy: {len(busy_ms)}")
        assert p99 <= bound, (sorted(looks_ms)[-5:], len(looks_ms), len(busy_ms))
        assert app.poll() is None and _rss_mb(app.pid) - rss0 < 20, (rss0, _rss_mb(app.pid))

        never_reads.close()
        asks.close()
        poll_until("the app's descriptors back where they were", lambda: _fds(app.pid) <= fds0 + 2, [app],
                   timeout=30)
        after = []
        for _ in range(50):  # the flood over: looks through the app at once again
            t0 = time.perf_counter()
            assert app_link.run_through_app(["status", "--json"]) == 0
            after.append((time.perf_counter() - t0) * 1000)
        after_p99 = statistics.quantiles(after, n=100, method="inclusive")[98]
        assert after_p99 <= (250 if os.environ.get("CI") else 100), sorted(after)[-5:]
        done = subprocess.run(look, env=env, capture_output=True, timeout=30)
        assert done.returncode == 0 and b'"connection": "live"' in done.stdout  # still answering through the link
    finally:
        stop_process(app, timeout=20)
        kill_agents_under(home)
    text = "".join(p.read_text(errors="replace") for p in (home / "logs").glob("*.log*"))
    for kind in ("refused a command's request", "neither a launch nor a command"):
        assert text.count(kind) == 1, (kind, text[-2000:])  # said once a run, however often it came
