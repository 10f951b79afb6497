"""Desktop app benchmark: start to the tray shown and to the window shown, event-loop lag with 100 hosts
streaming status, resident memory with 100 hosts, and lag while a real agent push runs.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/app_bench.py [--runs 5] [--seconds 10] [--rate 100] [--quick]

Start to the tray shown needs a real tray: where scripts/x_desktop.py's tools are (Xvfb, openbox, trayer,
x11-utils) the real start-up (`workroom.ui.main`, a first run: tray and window) runs on that desktop, and the
child reports when the tray icon's own X window is first exposed (trayer embedded and mapped it; the parent
then checks that window is in trayer's panel) and, apart, when the app's window is. Offscreen (no tray)
times start to the window, built as before (`startup_to_window_s`).

As root it also times the real start-up offscreen (login shell skipped) to this computer and `--live-hosts`
(10) loopback hosts live: goal (issue 26) <= 1.5 s; start to the tray shown: <= 0.5 s.

Goals (issue 5): window <= 1.5 s; lag p99 <= 50 ms; RSS <= 200 MB; lag during a push <= 50 ms.
The 100 hosts' status changes are constructed snapshots handed to the engine's listeners (what each
HostSession does on a change), at `--rate` changes per second spread over the hosts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "agent_bundle"), str(ROOT / "scripts")]


def child_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """A start-up child's environment: as a user's app runs, Python keeps its bytecode (an installed app has it;
    with PYTHONDONTWRITEBYTECODE set, as some shells here do, every start compiles the app's modules again,
    some 200-400 ms that no user pays). The first child writes it; `main` starts one untimed first."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child_startup() -> int:
    """Run as a fresh process: build the real app, print when the window is on screen, exit."""
    import qasync
    from PySide6.QtWidgets import QApplication

    app = QApplication([sys.argv[0]])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    async def run() -> None:
        from workroom.agent_bundle import load_agent_bundle
        from workroom.paths import app_paths
        from workroom.sessions.engine import Engine
        from workroom.ui.app import WorkroomApp

        paths = app_paths()
        wapp = WorkroomApp(Engine(paths, load_agent_bundle(paths)))
        wapp.start(show_window=True, connect=False)
        while not wapp.window.isVisible() or not wapp.window.windowHandle().isExposed():
            await asyncio.sleep(0.001)
        app.processEvents()
        print("shown", flush=True)

    with loop:
        loop.run_until_complete(run())
    return 0


def child_tray() -> int:
    """Run as a fresh process on a real X desktop: the real start-up (`workroom.ui.main.main`). Prints
    "tray <X window id>" when the tray icon's own X window is first exposed (the tray host embedded and
    mapped it) and "window" when the app's window is; then runs on until SIGTERM (its orderly quit).
    Only an event filter is added (removed once both were seen); the app is started unchanged."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtGui import QWindow
    from PySide6.QtWidgets import QApplication

    app = QApplication(["workroom-app"])

    class Probe(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.seen: set[str] = set()

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() != QEvent.Type.Expose or not isinstance(watched, QWindow) or not watched.isExposed():
                return False
            widget = next((w for w in QApplication.topLevelWidgets() if w.windowHandle() is watched), None)
            name = widget.metaObject().className() if widget is not None else ""
            if name == "QSystemTrayIconSys" and "tray" not in self.seen:
                self.seen.add("tray")
                print(f"tray {int(watched.winId())}", flush=True)
            elif name == "MainWindow" and "window" not in self.seen:
                self.seen.add("window")
                print("window", flush=True)
            if len(self.seen) == 2:
                app.removeEventFilter(self)
            return False

    probe = Probe()
    app.installEventFilter(probe)
    from workroom.ui.main import main as workroom_app

    code = workroom_app([])
    os._exit(code)  # skip interpreter teardown (see main())


def _read_line(proc: subprocess.Popen[str], deadline: float) -> str:
    """The child's next line, or "" when it ended or `deadline` (monotonic) passed."""
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(max(0.0, deadline - time.monotonic())):
            return ""
    return proc.stdout.readline().strip()


def bench_tray(runs: int) -> dict[str, object] | str:
    """App start (the process started) -> the tray icon shown in a real tray, and -> the window shown, on
    scripts/x_desktop.py's desktop; a first run in a fresh home each time, its agent bundle put in the home's
    cache first (an installed app reads the one it ships; only a checkout's first run builds it)."""
    from x_desktop import DesktopUnavailable, desktop, missing_tools

    missing = missing_tools()
    if missing:
        return f"skipped: no real tray here (missing {', '.join(missing)})"
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths

    trays, windows = [], []
    try:
        with desktop() as here:
            for _ in range(runs):
                home = tempfile.mkdtemp(prefix="wr-bench-tray-")
                load_agent_bundle(app_paths({"WORKROOM_HOME": home}))
                env = child_env(here.env, WORKROOM_HOME=home, WORKROOM_LOGIN_ENV="0", QT_QPA_PLATFORM="xcb")
                env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # the icon goes to trayer by XEmbed
                start = time.perf_counter()
                proc = subprocess.Popen([sys.executable, __file__, "--child-tray"], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, text=True)
                try:
                    seen: dict[str, float] = {}
                    tray_window = 0
                    deadline = time.monotonic() + 60
                    while len(seen) < 2:
                        line = _read_line(proc, deadline)
                        if not line:
                            raise SystemExit(f"tray child: no {'window' if 'tray' in seen else 'tray'} reported")
                        word, _, rest = line.partition(" ")
                        seen.setdefault(word, time.perf_counter() - start)
                        if word == "tray":
                            tray_window = int(rest)
                    if tray_window not in here.tray_icons(proc.pid):
                        raise SystemExit("tray child: its tray window is not in trayer's panel")
                    trays.append(seen["tray"])
                    windows.append(seen["window"])
                finally:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(10)
                    _kill_under(home)
    except DesktopUnavailable as error:
        return f"skipped: {error}"
    return {"runs": runs, "start_to_tray_shown_s": round(statistics.median(trays), 3),
            "start_to_window_shown_s": round(statistics.median(windows), 3),
            "tray_max_s": round(max(trays), 3), "window_max_s": round(max(windows), 3),
            "goals": {"start_to_tray_shown_s": "<= 0.5"}}


def child_live(hosts_json: str) -> int:
    """Run as a fresh process: the real start-up (`ui.main.show_early_tray` and `start_app`, login shell
    skipped), offscreen; print when the window (offscreen there is no tray) is shown, then when this computer
    and every host are live."""
    import qasync
    from PySide6.QtWidgets import QApplication

    app = QApplication([sys.argv[0]])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    async def run() -> None:
        from workroom.ui import main

        wapp = await main.start_app(False, main.show_early_tray(app))
        assert wapp is not None
        from workroom.core.connection import ConnectionState

        while not (wapp.tray.icon.isVisible() or wapp.window.isVisible()):
            await asyncio.sleep(0.001)
        print("shown", flush=True)
        want = len(json.loads(hosts_json)) + 1
        live = (ConnectionState.LIVE, ConnectionState.QUIET)
        deadline = time.monotonic() + 60
        while sum(s.connection.state in live for s in wapp.controller.snapshots()) < want:
            if time.monotonic() > deadline:
                print("timeout", flush=True)
                return
            await asyncio.sleep(0.002)
        print("live", flush=True)
        await wapp.close()

    with loop:
        loop.run_until_complete(run())
    os._exit(0)


def bench_live_hosts(runs: int, hosts: int) -> dict[str, object]:
    """App start -> tray shown, and -> this computer + `hosts` loopback hosts live (one sshd; the agent is
    installed first, so each host is a reconnect). Needs root (sshd logs in a throwaway user)."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tools" / "simbox")]
    from fixtures import sshd as sshd_mod
    from workroom.agent_bundle import load_agent_bundle
    from workroom.core.hosts import Host, IdentityRef
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine

    server = sshd_mod.launch(sshd_mod.make_workdir())
    home = tempfile.mkdtemp(prefix="wr-bench-live-")
    try:
        os.environ["WORKROOM_HOME"] = home
        paths = app_paths().ensure()
        paths.known_hosts_file.write_text(server.host_key_line + "\n")
        engine = Engine(paths, load_agent_bundle(paths), auto_reconnect=False)
        names = [f"loop-{i:02d}" for i in range(hosts)]
        for name in names:
            engine.add_host(Host(name=name, provider="ssh", address=server.host, port=server.port,
                                 user=server.user, identity=IdentityRef.file(str(server.key_path)),
                                 agent_candidates="user"))

        async def install() -> None:  # once, so every start below is a reconnect (and this computer's too)
            await engine.session(names[0]).connect(timeout=60)
            await engine.session(engine.hosts.hosts[0].name).connect(timeout=60)
            await engine.close()

        asyncio.run(install())
        shown, live = [], []
        env = child_env(WORKROOM_HOME=home, WORKROOM_LOGIN_ENV="0")
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, __file__, "--child-live", json.dumps(names)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "shown":
                raise SystemExit("live-hosts child failed before the window")
            shown.append(time.perf_counter() - start)
            line = proc.stdout.readline().strip()
            if line != "live":
                raise SystemExit(f"live-hosts child: {line or 'no answer'}")
            live.append(time.perf_counter() - start)
            proc.wait(30)
        return {"hosts": hosts, "runs": runs, "start_to_window_shown_s": round(statistics.median(shown), 3),
                "start_to_all_live_s": round(statistics.median(live), 3),
                "goals": {"start_to_all_live_s": "<= 1.5"}}
    finally:
        _kill_under(home)
        subprocess.run(["pkill", "-u", str(server.uid)], check=False)
        sshd_mod.shutdown(server)


def bench_startup(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        env = child_env(WORKROOM_HOME=tempfile.mkdtemp(prefix="wr-bench-"))
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, __file__, "--child-startup"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - start
        proc.wait(30)
        if line.strip() != "shown":
            raise SystemExit(f"startup child failed (rc {proc.returncode})")
        times.append(elapsed)
    return times


async def measure_lag(seconds: float, interval: float = 0.01) -> list[float]:
    lags = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        await asyncio.sleep(interval)
        lags.append(time.perf_counter() - start - interval)
    return lags


def summary(lags: list[float]) -> dict[str, float]:
    q = statistics.quantiles(lags, n=100)
    return {"p50_ms": round(q[49] * 1000, 2), "p99_ms": round(q[98] * 1000, 2),
            "max_ms": round(max(lags) * 1000, 2), "samples": len(lags)}


async def bench_hosts(hosts: int, seconds: float, rate: float) -> dict[str, object]:
    from demo_states import AGENT_MONOTONIC, busy, make_snapshot
    from workroom.agent_bundle import load_agent_bundle
    from workroom.core.connection import ConnectionState
    from workroom.core.hosts import Host
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine
    from workroom.ui.app import WorkroomApp

    os.environ["WORKROOM_HOME"] = tempfile.mkdtemp(prefix="wr-bench-hosts-")
    paths = app_paths()
    engine = Engine(paths, load_agent_bundle(paths))
    names = [f"host-{i:03d}" for i in range(hosts)]
    for name in names:
        engine.add_host(Host(name=name, provider="ssh", address="127.0.0.1"))
    wapp = WorkroomApp(engine)
    wapp.start(show_window=True, connect=False)
    rng = random.Random(5)

    def variant(name: str, step: int) -> object:
        kind = rng.random()
        if kind < 0.45:
            return make_snapshot(name, "ssh", **busy(awake_seconds=float(step)))
        if kind < 0.85:
            return make_snapshot(name, "ssh")
        if kind < 0.95:
            return make_snapshot(name, "boxd", prompt=True, **busy(
                awake_seconds=4 * 3600.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
                prompt_deadline=AGENT_MONOTONIC + 300 + step % 7))
        return make_snapshot(name, "ssh", ConnectionState.BACKING_OFF)

    async def stream(stop: asyncio.Event) -> int:
        sent = 0
        period = 1.0 / rate
        next_at = time.perf_counter()
        while not stop.is_set():
            snap = variant(rng.choice(names), sent)
            for listener in list(engine.listeners):
                listener(snap)
            sent += 1
            next_at += period
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        return sent

    await asyncio.sleep(0.3)
    stop = asyncio.Event()
    streamer = asyncio.ensure_future(stream(stop))
    lags = await measure_lag(seconds)
    stop.set()
    sent = await streamer
    result: dict[str, object] = {"hosts": hosts, "changes_per_s": round(sent / seconds, 1),
                                 "cards": len(wapp.window.cards.cards), **summary(lags), "rss_mb": round(rss_mb(), 1)}
    wapp.window.cards.timer.stop()
    await wapp.controller.close()
    return result


async def bench_push_with_lag() -> dict[str, object]:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine
    from workroom.ui.app import WorkroomApp

    home = tempfile.mkdtemp(prefix="wr-bench-push-")
    os.environ["WORKROOM_HOME"] = home
    paths = app_paths()
    engine = Engine(paths, load_agent_bundle(paths))
    wapp = WorkroomApp(engine)
    wapp.start(show_window=True, connect=False)
    name = engine.hosts.hosts[0].name
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append(time.perf_counter() - t - 0.005)

    tick = asyncio.ensure_future(ticker())
    start = time.perf_counter()
    snap = await engine.session(name).connect(30)
    elapsed = time.perf_counter() - start
    done.set()
    await tick
    pushed = snap.install.pushed_bytes if snap.install else None
    await wapp.controller.close()
    _kill_under(home)
    return {"connect_s": round(elapsed, 2), "pushed_bytes": pushed, "max_ms": round(max(lags) * 1000, 2),
            "p99_ms": round(statistics.quantiles(lags, n=100)[98] * 1000, 2) if len(lags) >= 100 else None,
            "samples": len(lags)}


def _kill_under(home: str) -> None:
    """Stop the agent this bench started (found by its WORKROOM_HOME path in its command line): SIGKILL, to the
    supervisor and its agent at once (a supervisor told to stop while its agent ends may start another)."""
    marker = home.encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "cmdline").read_bytes():
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass


def main() -> int:
    parser = argparse.ArgumentParser(description="Workroom desktop app benchmark")
    parser.add_argument("--child-startup", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=100.0, help="status changes per second over all hosts")
    parser.add_argument("--stress", action="store_true", help="also run at 5x the rate for half as long")
    parser.add_argument("--child-live", help=argparse.SUPPRESS)
    parser.add_argument("--child-tray", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-tray", action="store_true", help="skip start -> tray shown on a real X desktop")
    parser.add_argument("--live-hosts", type=int, default=10,
                        help="loopback hosts for start -> all live (as root; 0 to skip)")
    parser.add_argument("--quick", action="store_true", help="a short run of each (CI: the bench still works)")
    args = parser.parse_args()
    if args.child_startup:
        return child_startup()
    if args.child_live:
        return child_live(args.child_live)
    if args.child_tray:
        return child_tray()
    if args.quick:
        args.runs, args.hosts, args.seconds, args.stress, args.live_hosts = 1, 10, 1.0, False, min(args.live_hosts, 2)
    import qasync
    from PySide6.QtWidgets import QApplication

    bench_startup(1)  # untimed: writes the bytecode an installed app has (child_env)
    startup = bench_startup(args.runs)
    results: dict[str, object] = {"load_average": [round(x, 2) for x in os.getloadavg()],
                                  "startup_to_window_s": {"median": round(statistics.median(startup), 3),
                                                          "max": round(max(startup), 3), "runs": args.runs}}
    if not args.no_tray:
        results["start_on_a_real_tray"] = bench_tray(args.runs)
    if args.live_hosts and os.geteuid() == 0:
        results["start_to_live"] = bench_live_hosts(args.runs, args.live_hosts)
    elif args.live_hosts:
        results["start_to_live"] = "skipped: run as root (it starts sshd for a throwaway user)"
    app = QApplication([sys.argv[0]])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        results["hosts_streaming"] = loop.run_until_complete(bench_hosts(args.hosts, args.seconds, args.rate))
        if args.stress:
            results["hosts_streaming_x5"] = loop.run_until_complete(
                bench_hosts(args.hosts, args.seconds / 2, args.rate * 5))
        results["during_push"] = loop.run_until_complete(bench_push_with_lag())
    print(json.dumps(results, indent=2), flush=True)
    os._exit(0)  # skip interpreter teardown: PySide6 6.12 on CPython 3.11 can crash there (see docs/ui.md)


if __name__ == "__main__":
    sys.exit(main())
