"""A week in an hour: the desktop app against 20 loopback hosts, one of them dropped and back again and again, with
the app's memory, open files and threads sampled all along and `workroom status` timed through the app's link.

    sudo .venv/bin/python bench/soak_bench.py [--minutes 60] [--every 20] [--hosts 20] [--trace] [--quick]

The app is the real start-up (`workroom.ui.main`, offscreen, login shell skipped) in its own process. 19 hosts
are one sshd's test user (one agent on that "box"); the 20th is a second sshd with its own test user, dropped
every `--every` seconds as a box that goes away: its sshd stopped and every process of its user killed (the agent
and the app's SSH sessions with it), then after half the period its sshd started again on the same port and key,
and the app reconnects on its own. Every 5 s the app's resident size, open descriptors and threads are read from
/proc; every 2 s a `workroom status --json` runs through the running app's link (and says how many hosts are live; it is
timed from the first look with every host live, the start-up over).

Pass (the exit code, what a CI run checks): after the last return every host is live; the resident size at the
end <= 1.05 x the size after the first quarter (`--quick`: 1.15 x, the first minutes hold the start-up's own
growth); over the second half the least-squares slope of the resident size <= 3 MB an hour (over a run under
30 min the slope says little: not judged there); descriptors and threads flat (the last
quarter's low fifth <= the second's + 1: a reconnect in flight holds a few more for a moment, two at once a few
fewer, a leak raises the whole quarter). The status p99 is printed with the
five slowest looks (goal <= 100 ms on a quiet machine), not judged: a shared machine's load decides it.

`--trace`: the app runs tracemalloc and writes, at each quarter, the 25 lines that grew most since the first
quarter to `soak-trace.txt` in the current folder (where the memory goes; the resident size grows by tracing
itself, so read the trace for its lines, the figures from a run without it).
`--quick`: 45 s, 6 hosts, one dropped every 10 s (CI checks the script works; the bounds above, looser).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "agent_bundle"), str(ROOT / "scripts")]

SAMPLE_SECONDS = 5.0
STATUS_SECONDS = 2.0


def _proc_counts(pid: int) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return {"rss_mb": round(rss / 1024, 2), "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": len(os.listdir(f"/proc/{pid}/task"))}


def child(trace: bool, quarters: list[float]) -> int:
    """The app as `workroom-app` runs it (`ui.main.run_app`: the single-instance lock and the link included),
    offscreen; with `trace`, tracemalloc's growth since the first quarter written at each later one."""
    if trace:
        import tracemalloc
        tracemalloc.start(1)
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    QApplication([sys.argv[0]])
    base: list[object] = []

    def snapshot(at: float) -> None:
        import tracemalloc
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        if not base:
            base.append(snap)
            return
        with open("soak-trace.txt", "a") as f:
            f.write(f"--- at {at:.0f} s, growth since the first quarter ---\n")
            for stat in snap.compare_to(base[0], "lineno")[:25]:  # type: ignore[arg-type]
                f.write(f"{stat}\n")

    if trace:
        for q in quarters:
            QTimer.singleShot(int(q * 1000), lambda q=q: snapshot(q))
    from workroom.ui.main import run_app

    return run_app(show_window=False)


def _slope_mb_per_hour(points: list[tuple[float, float]]) -> float:
    n = len(points)
    if n < 3:
        return float("nan")
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return 0.0 if var == 0 else sum((t - mt) * (v - mv) for t, v in points) / var * 3600


def _at(samples: list[dict[str, float]], t: float) -> dict[str, float]:
    return min(samples, key=lambda s: abs(s["t"] - t))


def soak(minutes: float, every: float, hosts: int, trace: bool, quick: bool) -> int:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tools" / "simbox")]
    from app_bench import _kill_under, child_env
    from fixtures import sshd as sshd_mod
    from fixtures.procs import kill_uid_processes, stop_process
    from workroom.agent_bundle import load_agent_bundle
    from workroom.core.hosts import Host, IdentityRef
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine

    steady = sshd_mod.launch(sshd_mod.make_workdir())
    # The dropped box: a second sshd with its own login user (the same client key), so dropping it kills only it.
    dropped, drop_user = sshd_mod.second_login(steady, sshd_mod.make_workdir() / "dropped")
    home = tempfile.mkdtemp(prefix="wr-soak-")
    app = None
    try:
        os.environ["WORKROOM_HOME"] = home
        paths = app_paths().ensure()
        paths.known_hosts_file.write_text(steady.host_key_line + "\n" + dropped.host_key_line + "\n")
        engine = Engine(paths, load_agent_bundle(paths), auto_reconnect=False)
        names = [f"steady-{i:02d}" for i in range(hosts - 1)] + ["dropped"]
        for name in names:
            server = dropped if name == "dropped" else steady
            engine.add_host(Host(name=name, provider="ssh", address=server.host, port=server.port,
                                 user=drop_user.pw_name if name == "dropped" else server.user,
                                 identity=IdentityRef.file(str(server.key_path)), agent_candidates="user"))

        async def install() -> None:  # the agents installed first: the soak is about the app, not first pushes
            for name in (names[0], "dropped"):
                await engine.session(name).connect(timeout=60)
            await engine.close()

        asyncio.run(install())
        env = child_env(WORKROOM_HOME=home, WORKROOM_LOGIN_ENV="0")
        duration = minutes * 60
        quarters = [duration / 4, duration / 2, duration * 3 / 4, duration - SAMPLE_SECONDS]
        app = subprocess.Popen([sys.executable, __file__, "--child", "--quarters", json.dumps(quarters),
                                *(["--trace"] if trace else [])],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        samples: list[dict[str, float]] = []
        want = hosts + 1  # and this computer
        live = [0]

        def look() -> float | None:
            """`workroom status --json` through the running app: its time in ms (None: it failed)."""
            t = time.perf_counter()
            done = subprocess.run([*workroom, "status", "--json"], env=env, capture_output=True, timeout=30)
            took = (time.perf_counter() - t) * 1000
            try:
                rows = json.loads(done.stdout)
            except ValueError:
                return None
            live[0] = sum(1 for r in rows if r.get("connection") in ("live", "quiet"))  # as the app says it
            return took if done.returncode == 0 else None

        workroom = [sys.executable, "-m", "workroom.cli"] if not (Path(sys.executable).parent / "workroom").exists() \
            else [str(Path(sys.executable).parent / "workroom")]
        status_ms: list[float] = []
        status_failed = 0
        settled = False
        slowest: list[tuple[int, float, str]] = []  # (ms, when, the dropped host down or up then)
        start = time.monotonic()
        next_drop, next_status, next_sample, drops, is_down = start + every, start, start, 0, False
        deadline = start + duration
        while time.monotonic() < deadline:
            now = time.monotonic()
            if app.poll() is not None:
                print("the app ended during the soak", file=sys.stderr)
                return 1
            if now >= next_drop:
                if not is_down:  # the box goes away: its sshd and every process of its user
                    sshd_mod.stop_variant(dropped)
                    kill_uid_processes(drop_user.pw_uid)
                    drops += 1
                else:
                    sshd_mod.restart_variant(dropped)
                is_down = not is_down
                next_drop = now + every / 2
            if now >= next_status:
                took = look()
                settled = settled or live[0] == want  # timed from the first look with every host live (start-up over)
                if took is None:
                    status_failed += 1
                elif settled:
                    status_ms.append(took)
                    slowest.append((round(took), round(now - start, 1), "down" if is_down else "up"))
                    slowest.sort(reverse=True)
                    del slowest[5:]
                next_status = now + STATUS_SECONDS
            if now >= next_sample:
                samples.append({"t": now - start, "live": live[0], "want": want, **_proc_counts(app.pid)})
                next_sample = now + SAMPLE_SECONDS
            time.sleep(0.2)
        if is_down:
            sshd_mod.restart_variant(dropped)
        back = time.monotonic()
        while time.monotonic() < back + 60:  # every host live after the last return (the app retries on its own)
            look()
            if live[0] == want:
                break
            time.sleep(1.0)
        final = {"live": live[0], "want": want}
        q1 = _at(samples, duration / 4)
        half = _at(samples, duration / 2)
        second_half = [(s["t"], s["rss_mb"]) for s in samples if half["t"] <= s["t"] <= duration]
        slope = _slope_mb_per_hour(second_half)
        end = _at(samples, duration)
        ratio_bound = 1.15 if quick else 1.05
        ratio = end["rss_mb"] / q1["rss_mb"]
        # A dropped host's connection comes and goes (2-3 descriptors, a few threads while it reconnects): compare
        # the floor of each over the last quarter with the second's, where a quarter's floor is its low fifth (the
        # third fewest of 15 samples): a leak raises the whole quarter; a sample taken mid-reconnect is only a peak
        # (the 60-minute run's peaks: 100 then 103 threads, on a floor of 92 throughout), and a moment when a second
        # host was reconnecting too only a dip (in CI, 45 descriptors and 91 threads in the second quarter, on a
        # floor of 47 and 93 before and after: its fewest then read the last quarter's 47 as a leak).
        second_q = [x for x in samples if duration / 4 <= x["t"] < duration / 2]
        third_q = [x for x in samples if duration / 2 <= x["t"] < duration * 3 / 4]
        last_q = [x for x in samples if duration * 3 / 4 <= x["t"] <= duration]

        def floor(quarter: list[dict[str, float]], key: str) -> float:
            values = sorted(x[key] for x in quarter)
            return values[len(values) // 5]

        fds_grew = floor(last_q, "fds") - floor(second_q, "fds")
        threads_grew = floor(last_q, "threads") - floor(second_q, "threads")
        p99 = statistics.quantiles(status_ms, n=100)[98] if len(status_ms) >= 2 else float("nan")
        checks = {
            "every host live after the last return": final["live"] == final["want"],
            f"RSS at the end <= {ratio_bound} x after the first quarter": ratio <= ratio_bound,
            "descriptors flat (the last quarter's floor <= the second's + 1)": fds_grew <= 1,
            "threads flat (the last quarter's floor <= the second's + 1)": threads_grew <= 1,
        }
        if duration >= 30 * 60:
            checks["RSS slope over the second half <= 3 MB an hour"] = slope <= 3.0
        try:
            load = os.getloadavg()
        except OSError:
            load = (float("nan"),) * 3
        print(json.dumps({
            "minutes": minutes, "hosts": hosts, "drop_every_s": every, "drops": drops,
            "rss_mb": {"first_quarter": q1["rss_mb"], "half": half["rss_mb"], "end": end["rss_mb"],
                       "max": max(s["rss_mb"] for s in samples)},
            "rss_end_over_first_quarter": round(ratio, 3),
            "rss_slope_second_half_mb_per_hour": round(slope, 2),
            **{f"{key}_fewest_most": {name: [min(x[key] for x in q), max(x[key] for x in q)] for name, q in
                                       (("second_quarter", second_q), ("third_quarter", third_q),
                                        ("last_quarter", last_q)) if q}
               for key in ("fds", "threads")},
            "live_at_end": f"{final['live']}/{final['want']}",
            "status_ms": {"runs": len(status_ms), "failed": status_failed,
                          "median": round(statistics.median(status_ms), 1) if status_ms else None,
                          "p99": round(p99, 1), "slowest_ms_at_s": slowest},
            "load_average": [round(x, 2) for x in load],
            "series_t_rss_fds_threads": [[round(x["t"]), x["rss_mb"], x["fds"], x["threads"]]
                                         for x in samples[::max(1, len(samples) // 12)]],
            "checks": checks,
        }, indent=1))
        return 0 if all(checks.values()) else 1
    finally:
        if app is not None:
            stop_process(app, timeout=20)
        _kill_under(home)
        sshd_mod.stop_variant(dropped)
        sshd_mod.delete_test_user(drop_user.pw_name)
        sshd_mod.shutdown(steady)


def main() -> int:
    parser = argparse.ArgumentParser(description="Workroom desktop app soak")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quarters", help=argparse.SUPPRESS)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=20.0, help="seconds between drops of the dropped host")
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.child:
        return child(args.trace, json.loads(args.quarters or "[]"))
    if os.geteuid() != 0:
        print("run as root: each host logs in as a throwaway test user", file=sys.stderr)
        return 2
    if args.quick:
        args.minutes, args.every, args.hosts = 0.75, 10.0, 6
    return soak(args.minutes, args.every, args.hosts, args.trace, args.quick)


if __name__ == "__main__":
    sys.exit(main())
