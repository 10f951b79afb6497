"""Connect side by side with OpenSSH (issue 26): one loopback sshd, the same host, key and known host.

Times, interleaved run by run (so a busy machine slows every column alike), median of N:
  * `ssh -o BatchMode=yes host true`                      the floor: an OpenSSH login and one command;
  * `workroom connect host --json` (agent already there)  the CLI: start, log in, probe, relay, first status;
                                                          cold: no process of ours runs before the command;
  * `workroom status --live --json`                       the live look: a connection of its own to each host;
  * `workroom status` on simulated boxes (a second home:  the look (docs/cli.md, "A look is never a touch"): the
    two boxes of the real simulator, awake, known)        record and the simulator's health page, no box reached;
  * `workroom --version`                                  the CLI's start alone (imports);
  * `python -c "import asyncio, paramiko, pydantic.main"`  the libraries a connect of its own cannot do without
                                                          (trimmed as the command trims them): with the
                                                          in-process connect below, the floor left;
  * the in-process reconnect (an Engine, as the app does it) to first status, and its SSH-login phase alone;
  * the same reconnect with no socket remembered: the one command that probes and becomes the relay;
  * that command alone on the host, as the login user without SSH: to the answer to `subscribe`, and its CPU;
then, with the desktop app running (offscreen, `python -m workroom.ui.main`; its engine has the host live), the
same commands through the app (workroom.app_link), again interleaved with `ssh host true`:
  * `workroom status` and `workroom connect host` (the app answers; the command opens no SSH connection);
then the ratios and goals the issues state. The commands run with bytecode kept (PYTHONDONTWRITEBYTECODE
dropped from their environment), as an installed app runs; the untimed first connect writes it.

Run as root (sshd logs in a throwaway user):
    .venv/bin/python bench/connect_bench.py [--runs 8] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pwd
import resource
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "app"), str(ROOT / "tools" / "simbox")]

from fixtures import sshd as sshd_mod  # noqa: E402

WORKROOM = [str(Path(sys.executable).parent / "workroom")]
LIBRARIES = [sys.executable, "-c", "import workroom.remote, workroom.pydantic_plugins as p; p.skip_pydantic_plugins(); "
             "import asyncio, paramiko, pydantic.main"]
"""What any engine of the command's own imports before it can connect (its event loop, SSH, the core models'
library), trimmed as the command trims them (no `invoke` for paramiko, no plugin scan for pydantic)."""


def _timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    return elapsed


async def _reconnect(home: Path, direct: bool = True) -> tuple[float, dict[str, float], int]:
    """One in-process reconnect: seconds to the first status, its phases (from its start), bytes pushed.
    `direct`: as the app does, straight to the remembered socket; else the probe-then-relay command."""
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine

    paths = app_paths({"WORKROOM_HOME": str(home)})
    engine = Engine(paths, load_agent_bundle(paths), auto_reconnect=False)
    if not direct:
        engine.context.agent_sockets = None  # no socket remembered: the one command
    session = engine.session("bench")
    t0 = time.perf_counter()
    snap = await session.connect(timeout=60)
    elapsed = time.perf_counter() - t0
    phases = dict(session.phase_seconds)
    await engine.close()
    return elapsed, phases, snap.install.pushed_bytes if snap.install else -1


HOST_COMMAND_TIMEOUT_SECONDS = 30.0


def _host_command(server: sshd_mod.SshdServer, command: str) -> tuple[float, float]:
    """The probe-then-relay command run on the host as the login user, without SSH (what the host's side of a
    reconnect costs): seconds to the answer to `subscribe`, and the CPU seconds its processes used."""
    entry = pwd.getpwuid(server.uid)
    env = {"HOME": str(server.home), "USER": server.user, "PATH": "/usr/local/bin:/usr/bin:/bin"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(["setpriv", f"--reuid={server.uid}", f"--regid={entry.pw_gid}", "--init-groups",
                             "sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            cwd=server.home, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'{"id": 1, "method": "subscribe"}\n')
        proc.stdin.flush()
        buf, deadline = b"", t0 + HOST_COMMAND_TIMEOUT_SECONDS
        while b'"id": 1' not in buf and b'"id":1' not in buf:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.perf_counter()))
            chunk = os.read(proc.stdout.fileno(), 65536) if ready else b""
            if not chunk:
                raise SystemExit(f"the probe-then-relay command gave no answer to subscribe: {buf[-2000:]!r}")
            buf += chunk
        elapsed = time.perf_counter() - t0
    finally:
        proc.stdin.close()
        proc.wait(timeout=HOST_COMMAND_TIMEOUT_SECONDS)
        proc.stdout.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _probe_then_relay_command(home: Path) -> str:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.remote.agent_install import AgentInstaller, AgentLayout, ServeOptions
    from workroom.remote.host_shell import LocalShell

    paths = app_paths({"WORKROOM_HOME": str(home)})
    installer = AgentInstaller(LocalShell(), load_agent_bundle(paths), AgentLayout(), ServeOptions(workroom="bench"))
    return installer.probe_then_relay_command()


def _with_app(env: dict[str, str], runs: int, ssh: list[str]) -> dict[str, list[float]]:
    """The commands through the running app: it is started offscreen, waited for until it serves and has the host
    live, timed `runs` times interleaved with `ssh host true`, then quit with `workroom app quit`."""
    app_env = dict(env, QT_QPA_PLATFORM="offscreen", WORKROOM_LOGIN_ENV="0")
    app = subprocess.Popen([sys.executable, "-m", "workroom.ui.main"], env=app_env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            done = subprocess.run([*WORKROOM, "status", "--json"], env=env, capture_output=True, text=True,
                                  timeout=30)
            if done.returncode == 0 and done.stdout.startswith("[") and any(
                    h["name"] == "bench" and h.get("connection") in ("live", "quiet") for h in json.loads(done.stdout)):
                break
            if app.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the app did not serve with the host live: {done.stdout} {done.stderr}")
            time.sleep(0.2)
        columns: dict[str, list[float]] = {"app_ssh_true": [], "app_workroom_status": [], "app_workroom_connect": []}
        for _ in range(runs):
            columns["app_ssh_true"].append(_timed(ssh, env))
            columns["app_workroom_status"].append(_timed([*WORKROOM, "status"], env))
            columns["app_workroom_connect"].append(_timed([*WORKROOM, "connect", "bench"], env))
        subprocess.run([*WORKROOM, "app", "quit"], env=env, capture_output=True, timeout=30)
        app.wait(timeout=30)
        return columns
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(timeout=10)


def _look_home(work: Path) -> Path:
    """A home whose hosts are two boxes of the real simulator (tools/simbox), awake and idle, each known (as a
    connect would have left it): what `workroom status` is timed on. This computer is a host there too."""
    import simbox
    from workroom.core.last_known import LastKnown
    from workroom.known_records import verdicts_path, write_record
    from workroom.paths import app_paths

    home = work / "look-home"
    state = simbox.up(2, 600.0, home=work / "sim")
    env = dict(os.environ, WORKROOM_HOME=str(home))
    now = time.time()
    for box in simbox.connection_info(state)["boxes"]:
        subprocess.run([*WORKROOM, "hosts", "add", box["name"], "--provider", "simbox", "--host", "127.0.0.1",
                        "--port", str(box["ssh_port"]), "--user", box["user"], "--identity", box["client_key"],
                        "--ref", f"health_url={box['health_url']}", "--idle-window", "600"],
                       env=env, check=True, capture_output=True, timeout=60)
        known = LastKnown(doing="idle", reported="idle", since=now - 300, seen_at=now - 60)
        write_record(verdicts_path(app_paths({"WORKROOM_HOME": str(home)}).ensure().state_dir), box["name"],
                     known.to_record())
    return home


def _look_home_down(work: Path) -> None:
    if (work / "sim").exists():
        import simbox

        simbox.down(home=work / "sim")


def bench(server: sshd_mod.SshdServer, runs: int, work: Path) -> dict[str, object]:
    home = work / "home"
    # As a user runs it: Python may keep its bytecode (an installed app has it; with PYTHONDONTWRITEBYTECODE set,
    # as some shells here do, every run compiles the app's ~50 modules again: ~200 ms that no user pays).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["WORKROOM_HOME"] = str(home)
    look_env = dict(env, WORKROOM_HOME=str(_look_home(work)))
    known = work / "known_hosts"
    known.write_text(server.host_key_line + "\n")
    subprocess.run([*WORKROOM, "hosts", "add", "bench", "--provider", "ssh", "--host", server.host, "--port",
                    str(server.port), "--user", server.user, "--identity", str(server.key_path),
                    "--candidates", "user"], env=env, check=True, capture_output=True, timeout=60)
    from workroom.paths import app_paths

    app_paths({"WORKROOM_HOME": str(home)}).ensure().known_hosts_file.write_text(server.host_key_line + "\n")
    _timed([*WORKROOM, "connect", "bench", "--json"], env)  # the first push, not timed
    _timed([*WORKROOM, "status"], look_env)  # its bytecode written, not timed
    ssh = ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={known}",
           "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-i", str(server.key_path),
           "-p", str(server.port), f"{server.user}@{server.host}", "true"]
    columns: dict[str, list[float]] = {k: [] for k in (
        "ssh_true", "workroom_connect", "workroom_status_live", "workroom_look",
        "workroom_version", "library_imports", "reconnect",
        "reconnect_ssh_phase",
        "reconnect_one_command", "reconnect_one_command_ssh_phase", "host_command", "host_command_cpu")}
    # The app keeps each agent's key in the keyring, and its reconnects knock at the remembered socket with it; a
    # command's own connect keeps no key (docs/cli.md). So this process's engine has a keyring of its own (in
    # memory: the machine may have no keyring service), filled by one untimed connect of its own.
    import keyring
    from fixtures.memory_keyring import MemoryKeyring

    keyring.set_keyring(MemoryKeyring())
    asyncio.run(_reconnect(home, direct=False))
    command = _probe_then_relay_command(home)
    pushed: set[int] = set()
    phases: list[dict[str, float]] = []
    for _ in range(runs):
        columns["ssh_true"].append(_timed(ssh, env))
        columns["workroom_connect"].append(_timed([*WORKROOM, "connect", "bench", "--json"], env))
        columns["workroom_status_live"].append(_timed([*WORKROOM, "status", "--live", "--json"], env))
        columns["workroom_look"].append(_timed([*WORKROOM, "status"], look_env))
        columns["workroom_version"].append(_timed([*WORKROOM, "--version"], env))
        columns["library_imports"].append(_timed(LIBRARIES, env))
        total, phase, sent = asyncio.run(_reconnect(home))
        columns["reconnect"].append(total)
        columns["reconnect_ssh_phase"].append(phase["ssh"])
        phases.append(phase)
        pushed.add(sent)
        total, phase, sent = asyncio.run(_reconnect(home, direct=False))
        columns["reconnect_one_command"].append(total)
        columns["reconnect_one_command_ssh_phase"].append(phase["ssh"])
        pushed.add(sent)
        for _ in range(3):
            wall, cpu = _host_command(server, command)
            columns["host_command"].append(wall)
            columns["host_command_cpu"].append(cpu)
    columns.update(_with_app(env, runs * 3, ssh))
    med = {k: statistics.median(v) * 1000 for k, v in columns.items()}
    return {
        "load_average": [round(x, 2) for x in os.getloadavg()],  # a shared machine: read the figures with it
        "median_ms": {k: round(v, 1) for k, v in med.items()},
        "min_ms": {k: round(min(v) * 1000, 1) for k, v in columns.items()},
        "ratios": {
            "workroom_connect / ssh_true": round(med["workroom_connect"] / med["ssh_true"], 2),
            "workroom_look / ssh_true": round(med["workroom_look"] / med["ssh_true"], 2),
            "workroom_status_live / ssh_true": round(med["workroom_status_live"] / med["ssh_true"], 2),
            "floor: (library_imports + reconnect_one_command) / ssh_true": round(
                (med["library_imports"] + med["reconnect_one_command"]) / med["ssh_true"], 2),
            "reconnect / reconnect_ssh_phase": round(med["reconnect"] / med["reconnect_ssh_phase"], 2),
            "reconnect_one_command / its ssh phase": round(
                med["reconnect_one_command"] / med["reconnect_one_command_ssh_phase"], 2),
            "app_workroom_connect / app_ssh_true": round(med["app_workroom_connect"] / med["app_ssh_true"], 2),
        },
        "goals": {"workroom_connect / ssh_true (cold)": "<= 1.3", "workroom_look / ssh_true": "<= 0.5",
                  "reconnect / reconnect_ssh_phase": "<= 1.3",
                  "workroom_version": "<= 60 ms", "app_workroom_status": "<= 60 ms",
                  "app_workroom_connect": "<= 100 ms"},
        "reconnect_phases_ms": {k: round(statistics.median(p[k] for p in phases) * 1000, 1) for k in phases[0]},
        "reconnect_pushed_bytes": sorted(pushed),
        "runs": runs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="3 runs (CI: the bench still works)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: the benchmark starts sshd for a throwaway user", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="wr-connect-bench-"))
    server = sshd_mod.launch(sshd_mod.make_workdir())
    try:
        result = bench(server, 3 if args.quick else args.runs, work)
    finally:
        subprocess.run(["pkill", "-u", str(server.uid)], check=False)
        # `workroom status` also reached this computer, whose agent (and its supervisor) runs as us.
        subprocess.run(["pkill", "-KILL", "-f", f"{work}/home/"], check=False)
        _look_home_down(work)
        sshd_mod.shutdown(server)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
