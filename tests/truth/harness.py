"""Sleep truth: real workloads against the real agent, each in its own namespaces.

Each workload (workloads/*.sh) states its expected verdict, why a developer would expect it, and whether
that is debatable. The harness gives each one its own PID, mount, pts and network namespaces (a veth
"eth0" to a second namespace standing in for the outside world, which runs tools/outside.py), runs the
agent zipapp and the workload there as a throwaway unprivileged user, and records the agent's verdict
every second. Goals: no false IDLE during work, no BUSY for ever after it (or for an idle workload).

    sudo .venv/bin/python tests/truth/harness.py [-k NAME] [--jobs N] [--real-time]

By default holds and windows are shortened through the agent's options so the tier fits in CI;
`--real-time` runs production timings (30 s hold, 600 s watch window, longer work).
Needs root (namespaces, a test user). Every process, namespace, link and user made is removed by
name/PID at the end.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import json
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = HERE / "workloads"
HELD_OUT = HERE / "held_out"
"""Workloads written before the classifier's next rule and held out from its design (held_out/README.md): run with
the others, each under its own name; the tier knows which of them today's agent gets wrong (test_truth.py)."""
TOOLS = HERE / "tools"
AGENT_SRC = HERE.parent.parent / "agent_bundle"
SCRIPTS = HERE.parent.parent / "scripts"
PY = "/usr/bin/python3"  # the test user cannot run an interpreter under root's home (often 0700)
OUTSIDE_ADDR, INSIDE_ADDR = "10.200.0.1", "10.200.0.2"
OWN_PTYS = ("mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts"
            " && mount --bind /dev/pts/ptmx /dev/ptmx")
"""Shell run first in a fresh mount namespace: terminals of its own, as a separate machine has."""


@dataclass(frozen=True)
class Timings:
    hold: float
    watch: float
    work: float
    cpu_window: float = 10.0
    keystroke: float = 10.0
    grace: float = 5.0  # from the start of work to the first second that must be BUSY
    stay: float = 12.0  # IDLE this long (more than the hold) before a run counts as settled

    def agent_args(self) -> list[str]:
        return ["--hold-seconds", f"{self.hold:g}", "--watch-window", f"{self.watch:g}",
                "--cpu-window", f"{self.cpu_window:g}"]

    @property
    def settle(self) -> float:
        """Longest an ended workload may keep the verdict BUSY: the hold after the last vote, plus the
        longest window a vote can come from, plus a few ticks of slack for a loaded machine."""
        return self.hold + max(self.cpu_window, self.keystroke, self.watch) + 8.0


CI = Timings(hold=10.0, watch=45.0, work=20.0)
REAL = Timings(hold=30.0, watch=600.0, work=90.0, stay=40.0)


def selected_timings() -> Timings:
    """CI timings, or production ones when WR_TRUTH_REAL_TIME=1 (the pytest tier's `--real-time`)."""
    return REAL if os.environ.get("WR_TRUTH_REAL_TIME") == "1" else CI


@dataclass
class Workload:
    name: str
    path: Path
    expect: str  # "busy": BUSY while it works, IDLE after; "idle": IDLE once settled
    why: str
    debatable: str = ""
    needs: tuple[str, ...] = ()
    grace: float | None = None  # a longer time-to-busy the workload's header explains
    work: float | None = None  # seconds of work in CI timings, when the header needs more than the default
    side: str = "inside"  # "outside": sshd runs in the box, the script (an ssh client) in the outside world
    stay: float | None = None  # IDLE this long before it counts as settled, when a heartbeat must be seen to repeat
    remote: str = ""  # "sshd": a real sshd in the outside world, for the box's ssh client (SSH_REMOTE)
    proof: tuple[str, str] | None = None  # (file in its directory, regex): its own log says it really ran
    settle: str = ""  # its own bound on its time to IDLE, in place of the suite's: "hold+15" or seconds

    @classmethod
    def load(cls, path: Path) -> Workload:
        meta: dict[str, str] = {}
        for line in path.read_text().splitlines()[1:16]:
            if line.startswith("# ") and ":" in line:
                key, _, value = line[2:].partition(":")
                meta[key.strip()] = value.strip()
        expect = meta.get("expect", "")
        if expect not in ("busy", "idle") or not meta.get("why"):
            raise ValueError(f"{path.name}: needs '# expect: busy|idle' and '# why: ...'")
        grace = meta.get("grace")
        return cls(path.stem, path, expect, meta["why"], meta.get("debatable", ""),
                   tuple(meta.get("needs", "").split()), float(grace.split()[0]) if grace else None,
                   float(meta["work"].split()[0]) if meta.get("work") else None, meta.get("side", "inside"),
                   float(meta["stay"].split()[0]) if meta.get("stay") else None, meta.get("remote", ""),
                   tuple(meta["proof"].split(None, 1)) if meta.get("proof") else None,  # type: ignore[arg-type]
                   meta.get("settle", ""))

    def settle_limit(self, timings: Timings) -> float:
        """The longest its time to IDLE may be: the suite's bound, or the header's. A header is tighter for a
        listener (the hold plus a few seconds); the one looser bound is a goal the work has of its own, not the
        hold's: an editor left open is IDLE within 90 s of its tab loading, however long its start-up takes."""
        if not self.settle:
            return timings.settle
        extra = self.settle.split()[0]
        return timings.hold + float(extra[5:]) if extra.startswith("hold+") else float(extra)

    def missing(self) -> list[str]:
        return [n for n in self.needs if tool_path(n) is None]


EXTRA_BIN = ("/usr/lib/postgresql/*/bin",)
"""Where Debian puts tools that are not on PATH (PostgreSQL's server); tools/lib.sh adds the same to the
workloads' PATH. The harness's own caches (venv, node_modules) come in through `needs_cache`."""


CACHE_BIN: list[str] = []
"""The harness's caches' bin folders (cache.prepare), on the workloads' PATH after the system's."""
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


def tool_path(name: str) -> str | None:
    dirs = [d for pattern in EXTRA_BIN for d in sorted(glob.glob(pattern))] + CACHE_BIN
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(dirs))


def workload_path() -> str:
    return os.pathsep.join([BASE_PATH, *CACHE_BIN])


def workload_folders() -> list[Path]:
    """The folders workloads are read from (one, where a runner points both at the same place)."""
    return list(dict.fromkeys((WORKLOADS, HELD_OUT)))


def all_workloads() -> list[Workload]:
    return [Workload.load(p) for folder in workload_folders() for p in sorted(folder.glob("*.sh"))]


@dataclass
class Result:
    name: str
    expect: str
    why: str
    debatable: str
    samples: list[tuple[float, bool, list[str]]] = field(default_factory=list)  # (t from start, busy, reasons)
    work_start: float | None = None
    work_end: float | None = None
    error: str | None = None
    skipped: str | None = None
    grace: float | None = None
    proof: str | None = None  # the line of its own log that shows it really ran
    settle: float | None = None  # its own bound on the time to IDLE (Workload.settle_limit), else the suite's
    logs: dict[str, str] = field(default_factory=dict)  # file name -> the end of each log it left (see log_tails)

    def _settled_idle_from(self, after: float) -> float | None:
        """First time >= after from which the verdict stays IDLE to the end of the record."""
        t_idle = None
        for t, busy, _ in self.samples:
            if t < after:
                continue
            if busy:
                t_idle = None
            elif t_idle is None:
                t_idle = t
        return t_idle

    def false_idle(self, grace: float) -> int:
        grace = self.grace if self.grace is not None else grace
        if self.expect != "busy" or self.work_start is None or self.work_end is None:
            return 0
        return sum(1 for t, busy, _ in self.samples
                   if self.work_start + grace <= t <= self.work_end - 1.0 and not busy)

    def time_to_busy(self) -> float | None:
        """From the start of work to the first BUSY second (busy workloads); None for idle ones or never."""
        if self.expect != "busy" or self.work_start is None:
            return None
        return next((t - self.work_start for t, busy, _ in self.samples if t >= self.work_start and busy), None)

    def busy_fraction(self) -> float | None:
        if self.work_start is None:
            return None
        end = self.work_end if self.work_end is not None else (self.samples[-1][0] if self.samples else 0)
        during = [busy for t, busy, _ in self.samples if self.work_start <= t <= end]
        return sum(during) / len(during) if during else None

    def time_to_idle(self) -> float | None:
        ref = self.work_end if self.expect == "busy" else self.work_start
        if ref is None:
            return None
        t = self._settled_idle_from(ref)
        return None if t is None else t - ref

    def busy_for_ever(self, timings: Timings) -> bool:
        tti = self.time_to_idle()
        return tti is None or tti > (self.settle if self.settle is not None else timings.settle)

    def reasons(self, when: str) -> list[str]:
        seen: dict[str, int] = {}
        for t, busy, rs in self.samples:
            inside = (self.work_start is not None and self.work_end is not None
                      and self.work_start <= t <= self.work_end)
            if busy and (inside if when == "work" else not inside):
                for r in rs:
                    key = r.split(" (pid")[0]
                    seen[key] = seen.get(key, 0) + 1
        return [k for k, _ in sorted(seen.items(), key=lambda kv: -kv[1])][:3]

    def spans(self, limit: int = 6) -> str:
        """The BUSY stretches after the start of work (idle workloads: after setup), in seconds from it, each with
        its reasons: "3-24 s cpu: node, net: traffic; 44-56 s tcp: node". What a failure message shows, so a red
        run on another machine says when the verdict was busy and why."""
        ref = self.work_start if self.work_start is not None else 0.0
        out: list[tuple[float, float, dict[str, None]]] = []
        for t, busy, rs in self.samples:
            if t < ref or not busy:
                continue
            if out and t - out[-1][1] <= 1.5:
                out[-1] = (out[-1][0], t, out[-1][2])
            else:
                out.append((t, t, {}))
            for r in rs:
                out[-1][2].setdefault(r.split(" (pid")[0], None)
        text = "; ".join(f"{a - ref:.0f}-{b - ref:.0f} s {', '.join(rs)}" for a, b, rs in out[:limit])
        return (text + ("; …" if len(out) > limit else "")) or "never busy"

    def log_tails(self) -> str:
        """The end of every log the workload's run left (its tools', the agent's): what a red run on another
        machine, whose directory is gone, still says about why."""
        return "".join(f"\n--- {name} (end) ---\n{text}" for name, text in sorted(self.logs.items()))

    def ok(self, timings: Timings) -> bool:
        if self.skipped:
            return True
        if self.error:
            return False
        if self.expect == "busy" and (self.work_start is None or self.work_end is None):
            return False
        return self.false_idle(timings.grace) == 0 and not self.busy_for_ever(timings)


class Suite:
    """One run: a test user, a built agent, a private directory; workloads run in parallel."""

    def __init__(self, timings: Timings, keep: bool = False, jobs: int = 10) -> None:
        if os.geteuid() != 0:
            raise PermissionError("the truth suite needs root (namespaces and a test user)")
        self.timings = timings
        self.keep = keep
        self.jobs = jobs
        self.tag = str(os.getpid())  # the whole pid: stale-user reaping checks /proc/<tag>
        self.root = Path(tempfile.mkdtemp(prefix=f"wr-truth-{self.tag}-"))
        self.root.chmod(0o755)
        _reap_stale_users()
        self.user = f"wrtruth{self.tag}"
        # "*": no password but not locked (sshd refuses a locked account without PAM).
        subprocess.run(["useradd", "--password", "*", "--no-create-home", "--home-dir", str(self.root / "home"),
                        "--shell", "/bin/bash", "--user-group", self.user], check=True, capture_output=True,
                       timeout=30)
        entry = pwd.getpwnam(self.user)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.home = self.root / "home"
        self.home.mkdir(mode=0o755)
        os.chown(self.home, self.uid, self.gid)
        self.tools = self.root / "tools"
        shutil.copytree(TOOLS, self.tools)
        copies = [self.tools]
        for folder in workload_folders():  # each under its own name: a held-out script finds its tools beside it
            copies.append(self.root / folder.name)
            shutil.copytree(folder, copies[-1])
        for d in copies:
            for here, _dirs, files in os.walk(d):
                os.chmod(here, 0o755)
                for name in files:
                    os.chmod(os.path.join(here, name), 0o644)
        sys.path.insert(0, str(AGENT_SRC))
        from wr_agent import bundle  # the real agent, as the app ships it

        self.bundle = self.root / "wr-agent.pyz"
        bundle.write_bundle(str(self.bundle))
        self.bundle.chmod(0o644)
        self._lock = threading.Lock()
        self._n = 0

    def close(self) -> None:
        sys.path.insert(0, str(HERE.parent))
        from fixtures.procs import kill_uid_processes  # by PID, for this run's own user only

        kill_uid_processes(self.uid)
        subprocess.run(["userdel", "-f", self.user], capture_output=True, timeout=30)
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def run(self, w: Workload) -> Result:
        res = Result(w.name, w.expect, w.why, w.debatable, grace=w.grace, settle=w.settle_limit(self.timings))
        missing = w.missing()
        if missing:
            res.skipped = "not installed: " + " ".join(missing)
            return res
        with self._lock:
            self._n += 1
            n = self._n
        if n <= self.jobs:
            # The first batch starts a second apart: eight namespaces starting their servers, agents and
            # interpreters at once on 2 cores delayed a CPU burner's start past its grace.
            time.sleep(n - 1)
        try:
            self._run(w, n, res)
        except Exception as exc:  # recorded per workload; the suite goes on
            res.error = f"{type(exc).__name__}: {exc}"
        return res

    def _run(self, w: Workload, n: int, res: Result) -> None:
        tag = f"{self.tag}x{n}"
        ns_in, ns_out = f"wrti{tag}", f"wrto{tag}"
        v_in, v_out = f"wti{tag}"[:15], f"wto{tag}"[:15]
        d = self.root / w.name
        d.mkdir(mode=0o700)
        os.chown(d, self.uid, self.gid)
        sock = d / "agent.sock"
        cfg = {"uid": self.uid, "gid": self.gid, "home": str(self.home), "dir": str(d),
               "tools": str(self.tools), "outside": OUTSIDE_ADDR,
               "work": max(self.timings.work, w.work or 0) if self.timings is CI else self.timings.work,
               "socket": str(sock), "script": str(self.root / w.path.parent.name / w.path.name),
               "env": {"PATH": workload_path()},
               "agent": [PY, str(self.bundle), "serve", "--socket", str(sock), "--workroom", w.name,
                         *self.timings.agent_args()]}
        outside_env = None
        if w.side == "outside":
            cfg["sshd"], outside_env = self._sshd(d, cfg)
        remote_sshd = self._remote_sshd(d, cfg) if w.remote == "sshd" else None
        (d / "inner.json").write_text(json.dumps(cfg))
        procs: list[subprocess.Popen[bytes]] = []
        made_ns: list[str] = []
        try:
            for ns in (ns_in, ns_out):
                _sh("ip", "netns", "add", ns)
                made_ns.append(ns)
                _sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
                _sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
                _sh("ip", "-n", ns, "link", "set", "lo", "up")
            _sh("ip", "link", "add", v_in, "type", "veth", "peer", "name", v_out)
            _sh("ip", "link", "set", v_in, "netns", ns_in)
            _sh("ip", "link", "set", v_out, "netns", ns_out)
            _sh("ip", "-n", ns_in, "link", "set", v_in, "name", "eth0")
            _sh("ip", "-n", ns_in, "addr", "add", f"{INSIDE_ADDR}/24", "dev", "eth0")
            _sh("ip", "-n", ns_out, "addr", "add", f"{OUTSIDE_ADDR}/24", "dev", v_out)
            _sh("ip", "-n", ns_in, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns_out, "link", "set", v_out, "up")
            _sh("ip", "-n", ns_in, "route", "add", "default", "via", OUTSIDE_ADDR)
            outside = subprocess.Popen(["ip", "netns", "exec", ns_out, PY, str(self.tools / "outside.py"),
                                        OUTSIDE_ADDR], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            procs.append(outside)
            if remote_sshd is not None:
                with open(d / "remote-sshd.log", "wb") as log:
                    procs.append(subprocess.Popen(["ip", "netns", "exec", ns_out, *remote_sshd],
                                                  stdout=log, stderr=log, stdin=subprocess.DEVNULL))
            assert outside.stdout is not None
            if outside.stdout.readline().strip() != b"ready":
                raise RuntimeError("the outside-world server did not start")
            init = f"{OWN_PTYS} && exec {PY} {self.tools / 'inner.py'} {d / 'inner.json'}"
            with open(d / "inner.err", "wb") as err:
                inner = subprocess.Popen(["ip", "netns", "exec", ns_in, "unshare", "--pid", "--mount", "--fork",
                                          "--mount-proc", "--propagation", "private", "sh", "-c", init],
                                         stdout=subprocess.DEVNULL, stderr=err)
            procs.append(inner)
            if outside_env is not None:
                with open(d / "outside.log", "wb") as log:
                    # The developer's computer has its own terminals too: its typing is not this machine's.
                    outside_init = f"{OWN_PTYS} && exec /bin/bash {shlex.quote(cfg['script'])}"
                    procs.append(subprocess.Popen(["ip", "netns", "exec", ns_out, "unshare", "--mount",
                                                   "--propagation", "private", "sh", "-c", outside_init],
                                                  env=outside_env, cwd=str(d), stdout=log, stderr=log,
                                                  stdin=subprocess.DEVNULL))
            try:
                self._record(d, sock, res, inner, max(self.timings.stay, w.stay or 0.0))
            finally:
                res.logs = {f.name: _tail(f, 400) for f in sorted(d.glob("*.log"))[:20]}
            if w.proof is not None:
                res.proof = _proof(d / w.proof[0], w.proof[1])
                if res.proof is None:
                    res.error = f"no proof it ran: /{w.proof[1]}/ not in {w.proof[0]}: " + _tail(d / w.proof[0])
        finally:
            _stop(procs)
            for ns in made_ns:
                for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                                          timeout=30).stdout.split():
                    try:
                        os.kill(int(pid), 9)
                    except (ProcessLookupError, ValueError):
                        pass
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def _sshd_with_keys(self, keys: Path, listen: str, names: tuple[str, str]) -> list[str]:
        """A real sshd's command (run as root; logins as the test user) listening on `listen`:22, with a host key
        and one client key made in `keys`, the host key pinned in `keys`/known_hosts."""
        for extra in (HERE.parent, HERE.parent.parent / "tools" / "simbox"):  # as pytest's pythonpath
            if str(extra) not in sys.path:
                sys.path.insert(0, str(extra))
        from fixtures import sshd as sshd_fixture

        sshd = sshd_fixture.find_sshd()
        if sshd is None:
            raise RuntimeError("OpenSSH server not installed")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        keys.mkdir(mode=0o755)
        sshd_fixture.keygen(keys / "host", names[0])
        sshd_fixture.keygen(keys / "client", names[1])
        auth = keys / "authorized_keys"
        auth.write_text((keys / "client.pub").read_text())
        auth.chmod(0o644)
        (keys / "known_hosts").write_text(f"{listen} {(keys / 'host.pub').read_text()}")
        (keys / "known_hosts").chmod(0o644)
        config = sshd_fixture.write_sshd_config(keys, listen=listen, port=22, user=self.user,
                                                host_key=keys / "host", authorized_keys=str(auth))
        return [sshd, "-D", "-e", "-f", str(config)]

    @staticmethod
    def _ssh_command(keys: Path, target: str, extra: str = "") -> str:
        return (f"ssh -F /dev/null{extra} -i {keys / 'client'} -o IdentitiesOnly=yes -o BatchMode=yes"
                " -o ConnectionAttempts=10"  # sshd may not listen yet: one try a second
                f" -o UserKnownHostsFile={keys / 'known_hosts'} -o StrictHostKeyChecking=yes {target}")

    def _sshd(self, d: Path, cfg: dict) -> tuple[list[str], dict[str, str]]:
        """sshd for the box (run by its init, as root) and the ssh command a developer outside types."""
        keys = d / "ssh"
        argv = self._sshd_with_keys(keys, INSIDE_ADDR, ("truth-host", "truth-client"))
        ssh = self._ssh_command(keys, f"{self.user}@{INSIDE_ADDR}", " -tt")
        env = {"PATH": workload_path(), "HOME": str(keys), "TRUTH_DIR": str(d),
               "TRUTH_WORK": str(cfg["work"]), "TRUTH_TOOLS": str(self.tools), "SSH_CMD": ssh,
               "TERM": "xterm", "LANG": "C.UTF-8"}
        return argv, env

    def _remote_sshd(self, d: Path, cfg: dict) -> list[str]:
        """A real sshd in the outside world, and the ssh command the box's jobs run as SSH_REMOTE (its key the
        test user's own, the outside's host key pinned)."""
        keys = d / "rssh"
        argv = self._sshd_with_keys(keys, OUTSIDE_ADDR, ("truth-remote", "truth-box"))
        os.chown(keys / "client", self.uid, self.gid)
        cfg.setdefault("env", {})["SSH_REMOTE"] = self._ssh_command(keys, f"{self.user}@{OUTSIDE_ADDR}")
        return argv

    def _record(self, d: Path, sock: Path, res: Result, inner: subprocess.Popen[bytes], stay: float) -> None:
        tm = self.timings
        t0 = time.monotonic()
        conn = None
        while conn is None:
            if time.monotonic() - t0 > 30 or inner.poll() is not None:
                raise RuntimeError("the agent did not start: " + _tail(d / "agent.log") + _tail(d / "inner.err"))
            if sock.exists():
                conn = Relay(self.bundle, sock, self.uid, self.gid)
            else:
                time.sleep(0.2)
        wall0 = time.time() - (time.monotonic() - t0)
        limit = tm.work * 3 + tm.settle + stay + 60  # a workload that never says it started or ended
        k = 0
        try:
            while True:
                k += 1
                time.sleep(max(0.0, t0 + k - time.monotonic()))
                t = time.monotonic() - t0
                rep = conn.call({"id": k, "method": "status"})["result"]
                res.samples.append((t, rep["verdict"] == "BUSY", list(rep.get("busy_reasons") or [])))
                for marker, attr in (("work_started", "work_start"), ("work_done", "work_end")):
                    if getattr(res, attr) is None and (d / marker).exists():
                        setattr(res, attr, (d / marker).stat().st_mtime - wall0)
                ref = res.work_end if res.expect == "busy" else res.work_start
                if ref is not None:
                    tti = res._settled_idle_from(ref)
                    if tti is not None and t - tti >= stay and t - ref >= stay:
                        return
                    if t - ref > tm.settle + stay:
                        return  # busy for ever: recorded as such
                if t > limit:
                    return
        finally:
            conn.close()


class Relay:
    """Status requests through `wr-agent relay` run as the test user: the agent answers only its own uid,
    as it does for the app. The relay runs outside the workload's PID namespace."""

    def __init__(self, bundle: Path, sock: Path, uid: int, gid: int) -> None:
        self.proc = subprocess.Popen([PY, str(bundle), "relay", "--socket", str(sock)], user=uid, group=gid,
                                     extra_groups=[], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd="/")
        hello = self._read()
        if hello.get("hello") != "wr-agent":
            raise RuntimeError(f"the agent did not greet: {hello}")

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the agent's relay closed")
        return json.loads(line)

    def call(self, obj: dict) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj).encode() + b"\n")
        self.proc.stdin.flush()
        for _ in range(1000):
            rep = self._read()
            if "event" not in rep:
                return rep
        raise RuntimeError("no reply among the agent's events")

    def close(self) -> None:
        _stop([self.proc])


def _reap_stale_users() -> None:
    """Delete users left by a crashed earlier run (named for a harness pid that is gone)."""
    for entry in pwd.getpwall():
        tag = entry.pw_name[len("wrtruth"):]
        if entry.pw_name.startswith("wrtruth") and tag.isdigit() and not Path(f"/proc/{tag}").exists():
            subprocess.run(["userdel", "-f", entry.pw_name], capture_output=True, timeout=30)


def _sh(*argv: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """The desktop's `stop_all` (scripts/x_desktop.py): the last started first, SIGTERM, then SIGKILL after
    5 s, each reaped. The harness also runs on its own, so it puts scripts/ on its path itself."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from x_desktop import stop_all

    stop_all(procs)


def _proof(path: Path, pattern: str) -> str | None:
    """The first line of a workload's own log that matches: the proof it really ran."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    m = re.search(pattern, text, re.MULTILINE)
    if m is None:
        return None
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return text[start:end if end >= 0 else len(text)].strip()[:100]


def _tail(path: Path, size: int = 600) -> str:
    try:
        return path.read_text(errors="replace")[-size:]
    except OSError:
        return ""


def run_suite(workloads: list[Workload], timings: Timings, jobs: int, keep: bool = False) -> list[Result]:
    import cache  # beside this file

    CACHE_BIN[:] = cache.prepare({n for w in workloads for n in w.needs})
    suite = Suite(timings, keep=keep, jobs=jobs)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            # Long ones first, so the tail of the run is not one slow workload alone: those that stay minutes (an
            # editor tab left open), then the busy ones.
            order = sorted(workloads, key=lambda w: (-(w.stay or 0.0), w.expect != "busy"))
            return list(pool.map(suite.run, order))
    finally:
        suite.close()


def table(results: list[Result], timings: Timings) -> str:
    head = (f"{'workload':<26} {'expect':<6} {'busy%':>6} {'false idle':>10} {'to busy':>8} {'to idle':>8} {'ok':<4} "
            f"reasons (work) / after")
    lines = [head, "-" * len(head)]
    for r in sorted(results, key=lambda r: r.name):
        if r.skipped or r.error:
            lines.append(f"{r.name:<26} {r.expect:<6} {'-':>6} {'-':>10} {'-':>8} {'-':>8} "
                         f"{'skip' if r.skipped else 'ERR':<4} {r.skipped or r.error}")
            continue
        bf = r.busy_fraction()
        tti = r.time_to_idle()
        ttb = r.time_to_busy()
        lines.append(
            f"{r.name + (' *' if r.debatable else ''):<26} {r.expect:<6} "
            f"{'-' if bf is None else f'{bf * 100:.0f}':>6} {r.false_idle(timings.grace):>10} "
            f"{'-' if ttb is None else f'{ttb:.0f} s':>8} "
            f"{'never' if tti is None else f'{tti:.0f} s':>8} {'yes' if r.ok(timings) else 'NO':<4} "
            f"{', '.join(r.reasons('work')) or '-'} / {', '.join(r.reasons('after')) or '-'}")
    lines.append("* debatable (see the workload's header).  busy% = BUSY seconds during work (idle: after "
                 "setup); to busy = from the start of work to the first BUSY second; to idle = from the end of work "
                 "(idle: from setup) to a verdict that stays IDLE.")
    ran = [r for r in results if not (r.skipped or r.error)]
    ttbs = [t for t in (r.time_to_busy() for r in ran) if t is not None]
    ttis = [t for t in (r.time_to_idle() for r in ran) if t is not None]
    lines.append(f"{len(results)} workloads ({len(ran)} ran, {sum(1 for r in results if r.skipped)} skipped, "
                 f"{sum(1 for r in results if r.error)} errors): false idle in "
                 f"{sum(1 for r in ran if r.false_idle(timings.grace))}, busy for ever in "
                 f"{sum(1 for r in ran if r.busy_for_ever(timings))}; worst time to busy "
                 f"{max(ttbs, default=0):.0f} s, worst time to idle {max(ttis, default=0):.0f} s; "
                 f"{sum(1 for r in results if r.proof)} proved by their own logs")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="only", action="append", default=[], help="run only workloads with this in the name")
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--real-time", action="store_true", help="production timings (30 s hold, 600 s watch)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory (logs) for a look")
    a = ap.parse_args(argv)
    timings = REAL if a.real_time else CI
    ws = [w for w in all_workloads() if not a.only or any(k in w.name for k in a.only)]
    t = time.monotonic()
    results = run_suite(ws, timings, a.jobs, keep=a.keep)
    if a.keep:
        with open(os.path.join(tempfile.gettempdir(), f"wr-truth-{os.getpid()}.json"), "w") as f:
            json.dump([r.__dict__ for r in results], f)
            print("samples:", f.name)
    print(table(results, timings))
    bad = [r.name for r in results if not r.ok(timings)]
    print(f"{len(results)} workloads in {time.monotonic() - t:.0f} s; "
          f"{'all as expected' if not bad else 'NOT as expected: ' + ', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
