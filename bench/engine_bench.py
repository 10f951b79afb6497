"""Engine benchmark (issue 4): a real sshd on loopback, the real agent, the real engine.

Measures:
  * first push: connect to a host with no agent -> first status (upload + start included);
  * reconnect to an up-to-date host -> first status (median of N), and the bytes pushed (must be 0);
  * agent change -> app event: a job starts on the host -> the app's session sees BUSY. The job burns CPU
    (the classifier calls it work at once; a short `sleep` is not work under the timer-sleep rule).

Run as root (it creates a throwaway user for sshd):  .venv/bin/python bench/engine_bench.py [--runs 15]
`--quick`: one reconnect and one change, the agent started with a 1 s hold (seconds; no figures asserted).
(`bench/connect_bench.py` times the same reconnect beside `ssh host true` and the CLI.)
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

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "app")]

from fixtures import sshd as sshd_mod  # noqa: E402
from workroom.agent_bundle import locate_agent_bundle  # noqa: E402
from workroom.core.hosts import Host, IdentityRef  # noqa: E402
from workroom.core.protocol import Verdict  # noqa: E402
from workroom.paths import app_paths  # noqa: E402
from workroom.providers import make_provider  # noqa: E402
from workroom.remote.agent_install import ServeOptions  # noqa: E402
from workroom.sessions.engine import Engine  # noqa: E402

JOB_SECONDS = 3
"""How long the timed job burns CPU."""


def short_hold(engine: Engine) -> Engine:
    """Quick mode: the agent this engine starts holds BUSY for 1 s, not 30 s, so IDLE comes soon."""
    provider = make_provider("ssh", engine.context)
    plain = provider.serve_options

    def serve_options(host: Host) -> ServeOptions:
        base = plain(host)
        return ServeOptions(workroom=base.workroom, candidates=base.candidates, heartbeat=base.heartbeat,
                            heartbeat_interval=base.heartbeat_interval, extra=(*base.extra, "--hold-seconds", "1"))

    provider.serve_options = serve_options  # type: ignore[method-assign]
    engine.use_provider(provider)
    return engine


async def bench(server: sshd_mod.SshdServer, runs: int, work: Path, quick: bool = False) -> dict[str, object]:
    paths = app_paths({"WORKROOM_HOME": str(work / "home")}).ensure()
    paths.known_hosts_file.write_text(server.host_key_line + "\n")
    bundle = locate_agent_bundle(work / "cache")
    host = Host(name="bench", provider="ssh", address=server.host, port=server.port, user=server.user,
                identity=IdentityRef.file(str(server.key_path)), agent_candidates="user")
    engine = Engine(paths, bundle, auto_reconnect=False)
    if quick:
        short_hold(engine)
    engine.add_host(host)

    t0 = time.perf_counter()
    first = await engine.session("bench").connect(timeout=60)
    first_push = time.perf_counter() - t0
    await engine.close()

    reconnects, pushed, phases = [], [], []
    for _ in range(runs):
        e = Engine(paths, bundle, auto_reconnect=False)
        t0 = time.perf_counter()
        snap = await e.session("bench").connect(timeout=60)
        reconnects.append(time.perf_counter() - t0)
        phases.append(e.session("bench").phase_seconds)
        pushed.append(snap.install.pushed_bytes if snap.install else -1)
        await e.close()

    e = Engine(paths, bundle, auto_reconnect=False)
    session = e.session("bench")
    await session.connect(timeout=60)
    change_times = []
    for _ in range(min(runs, 5)):
        # Wait for IDLE (the agent's 30 s hold after the previous job), then time a new job.
        deadline = time.monotonic() + 60
        while (session.status is None or session.status.verdict is not Verdict.IDLE) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        busy = asyncio.Event()
        def on_busy(s, busy=busy):  # type: ignore[no-untyped-def]
            if s.status and s.status.verdict is Verdict.BUSY:
                busy.set()

        session.listeners.append(on_busy)
        t0 = time.perf_counter()
        job = await asyncio.create_subprocess_exec(
            "runuser", "-u", server.user, "--", "timeout", str(JOB_SECONDS), "sh", "-c", "while :; do :; done")
        await asyncio.wait_for(busy.wait(), 10)
        change_times.append(time.perf_counter() - t0)
        session.listeners.pop()
        await job.wait()
        if len(change_times) >= 2:
            break
    await e.close()
    return {
        "first_push_s": round(first_push, 3),
        "first_push_bytes": first.install.pushed_bytes if first.install else None,
        "reconnect_first_status_median_ms": round(statistics.median(reconnects) * 1000, 1),
        "reconnect_first_status_p90_ms": round(sorted(reconnects)[max(0, int(len(reconnects) * 0.9) - 1)] * 1000, 1),
        "reconnect_pushed_bytes": sorted(set(pushed)),
        "agent_change_to_app_event_ms": [round(t * 1000, 1) for t in change_times],
        "reconnect_phases_median_ms": {k: round(statistics.median(p[k] for p in phases) * 1000, 1)
                                       for k in phases[0]},
        "runs": runs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="a few seconds: one of each, no figures asserted")
    args = parser.parse_args()
    if args.quick:
        args.runs = 3
    if os.geteuid() != 0:
        print("run as root: the benchmark starts sshd for a throwaway user", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="wr-engine-bench-"))
    server = sshd_mod.launch(sshd_mod.make_workdir())
    try:
        result = asyncio.run(bench(server, 1 if args.quick else args.runs, work, quick=args.quick))
    finally:
        subprocess.run(["pkill", "-u", str(server.uid)], check=False)
        sshd_mod.shutdown(server)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
