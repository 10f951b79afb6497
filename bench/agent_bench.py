"""wr-agent benchmark: tick cost (share of one core) with ~20 and 500 extra sleeping processes, resident
memory, time-to-busy and time-to-idle. Prints the figures; cleans up every process it started by PID.

    sudo .venv/bin/python bench/agent_bench.py [--seconds 20] [--mode ns|host] [--full-record]
        [--connections 200] [--chatty] [--quick] [--baseline REF [--runs 3]]

`--connections N`: N established loopback connections (idle, held by one process) beside the sleepers, as a
box with a database pool, editors' language servers and browser tabs has. `--chatty`: one of them carries a
ping every second, so segments move on every tick and the agent reads every socket each time (the gate open).
`--quick`: one short run (5 s, 20 sleepers, one trial) to check the script works.
`--baseline REF`: the agent as it was at git REF (its agent_bundle, bundled the same way) measured beside this
tree's, alternating run by run (`--runs` each), so a change is read against what it replaces on the same machine
at the same moment; prints both and the medians.

`ns` (default as root): the agent and the sleepers run in a fresh PID namespace, so the process count is
exactly what is measured. `host`: the agent watches the whole host (`--candidates user` when not root).
Goals (the agent at a tenth of a percent): <= 0.1 % of a core at 500 sleepers and 200 idle connections, RSS <= 16
MB, busy <= 1 s for CPU work and <= 5 s for a new silent wait (a job step asking a server in the box that holds the
request), idle <= hold + 1 s. On a quiet box the agent reads quick processes every SLOW_WALK seconds only.
`--quick`: ~20 sleepers, a 1 s window, one busy/idle cycle with a 1 s hold (seconds; no figures asserted).
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_SRC = os.path.join(os.path.dirname(HERE), "agent_bundle")
SPAWNER = ("import os, signal, sys\n"
           "for _ in range(int(sys.argv[1])):\n"
           "    if os.fork() == 0:\n"
           "        signal.pause(); os._exit(0)\n"
           "print('ready', flush=True)\n"
           "signal.pause()\n")
BURN = "import time\nt = time.monotonic() + 30\nwhile time.monotonic() < t: pass\n"
# A server in the box that takes a request and holds it (blocked on a pipe nobody writes: no CPU, no timer sleep,
# not reading the client), and a job whose step asks it and waits in silence: the time to BUSY of a new silent wait.
HOLDING_SERVER = ("import os, select, socket, sys\n"
                  "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); print('ready', flush=True)\n"
                  "r, w = os.pipe(); conns = []\n"
                  "while True:\n"
                  "    c, _ = s.accept(); c.recv(16); conns.append(c)\n"
                  "    select.select([r, s], [], [])\n")
# The step is an existing process (started well before, waiting for its go on stdin): no new pid tells the agent
# that something changed, so this is the wait a quiet box's slower reads must still see within 5 s.
SILENT_JOB = ("import socket, sys\n"
              "sys.stdin.readline()\n"
              "c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.sendall(b'query'); c.recv(1)\n")
# N idle loopback connections in one process (both ends), optionally one ping a second on the first.
HOLDER = ("import os, signal, socket, sys, time\n"
          "n, chatty = int(sys.argv[1]), sys.argv[2] == '1'\n"
          "os.system('ip link set lo up 2>/dev/null')\n"
          "srv = socket.create_server(('127.0.0.1', 0), backlog=n)\n"
          "pairs = []\n"
          "for _ in range(n):\n"
          "    c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()\n"
          "    c.sendall(b'hello'); a.recv(5); a.sendall(b'ok'); c.recv(2); pairs.append((c, a))\n"
          "print('ready', flush=True)\n"
          "while True:\n"
          "    if not chatty:\n"
          "        signal.pause(); continue  # not a timer sleep, which a job step would be\n"
          "    pairs[0][0].sendall(b'p'); pairs[0][1].recv(1); pairs[0][1].sendall(b'p'); pairs[0][0].recv(1)\n"
          "    time.sleep(1)\n")
CLK = os.sysconf("SC_CLK_TCK")
SLOW_WALK_MAX = 3.0  # the agent's host_signals.SLOW_WALK


def descendants(pid):
    out = []
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return out
    for k in kids:
        out.append(k)
        out.extend(descendants(k))
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


class Runner:
    def __init__(self, mode):
        self.mode = mode
        self.procs = []
        self.inner = None
        if mode == "ns":
            setup = "mount -t devpts -o newinstance devpts /dev/pts 2>/dev/null; exec sleep 3600"
            self.unshare = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--net", "sh", "-c",
                                             setup])
            deadline = time.monotonic() + 5
            while self.inner is None and time.monotonic() < deadline:
                kids = [k for k in descendants(self.unshare.pid) if comm(k) == "sleep"]
                self.inner = kids[0] if kids else None
                time.sleep(0.02)

    def popen(self, argv, **kw):
        if self.mode == "ns":
            argv = ["nsenter", "--target", str(self.inner), "--pid", "--mount", "--net", "--", *argv]
        p = subprocess.Popen(argv, **kw)
        self.procs.append(p)
        return p

    def kill(self, p):
        for pid in reversed(descendants(p.pid)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)

    def close(self):
        for p in self.procs:
            self.kill(p)
        if self.mode == "ns":
            try:
                os.kill(self.inner, signal.SIGKILL)
            except (ProcessLookupError, TypeError):
                pass
            self.unshare.wait(timeout=10)


def cpu_seconds(pid):
    """CPU time of all the agent's threads, in ns precision (schedstat), not 10 ms clock ticks."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Sub:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rb")
        json.loads(self.f.readline())
        self.s.sendall(b'{"id":1,"method":"subscribe"}\n')
        self.first = json.loads(self.f.readline())["result"]

    def wait_verdict(self, verdict, timeout):
        self.s.settimeout(timeout)
        while True:
            msg = json.loads(self.f.readline())
            if msg.get("event") == "status" and msg["status"]["verdict"] == verdict:
                return time.monotonic()


def seed_full_record(path, budget=128 * 1024):
    """A why-awake record at its byte budget (short alternating spans up to now), as after a busy week."""
    spans, size, t = [], 0, time.time() - 6 * 86400
    states = (["busy", "cpu", "cc1"], ["held", "cpu", "cc1"], ["idle", "", ""], ["busy", "tcp", "ssh"])
    while size < budget - 200 and t < time.time() - 120:
        span = [round(t, 1), round(t + 61, 1), *states[len(spans) % 4]]
        spans.append(span)
        size += len(json.dumps(span, separators=(",", ":"))) + 1
        t += 61
    with open(path, "w") as f:
        json.dump({"format": 1, "last_note": None, "spans": spans}, f, separators=(",", ":"))
    os.chmod(path, 0o600)


def bundle_from(ref, out_dir):
    """The agent zipapp built from git REF's agent_bundle (None: this tree's), in out_dir; returns its path."""
    src = AGENT_SRC
    if ref is not None:
        src = os.path.join(out_dir, "src")
        os.makedirs(src)
        archive = subprocess.run(["git", "-C", os.path.dirname(HERE), "archive", ref, "agent_bundle"],
                                 check=True, capture_output=True, timeout=60).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True, timeout=60)
        src = os.path.join(src, "agent_bundle")
    pyz = os.path.join(out_dir, "wr-agent.pyz")
    subprocess.run([sys.executable, "-m", "wr_agent", "bundle", "--out", pyz], check=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=src), stdout=subprocess.DEVNULL)
    return pyz, launch_flags(src)


def launch_flags(src):
    """The interpreter flags that build's launcher runs the bundle with (its AGENT_FLAGS; none before it had
    them): each build is measured as it is deployed."""
    with open(os.path.join(src, "wr_agent", "launcher.py")) as f:
        text = f.read()
    return ["-I", "-S"] if 'AGENT_FLAGS = ("-I", "-S")' in text else []


def measure(mode, extra, seconds, hold, full_record=False, connections=0, chatty=False, cycles=3, warm_up=3.0,
            ref=None):
    r = Runner(mode)
    tmp = tempfile.mkdtemp(prefix="wrbench")
    os.chmod(tmp, 0o700)
    sock = os.path.join(tmp, "agent.sock")
    try:
        spawner = r.popen([sys.executable, "-c", SPAWNER, str(extra)], stdout=subprocess.PIPE)
        spawner.stdout.readline()
        if connections:
            holder = r.popen([sys.executable, "-c", HOLDER, str(connections), "1" if chatty else "0"],
                             stdout=subprocess.PIPE)
            if holder.stdout.readline().strip() != b"ready":
                raise RuntimeError("the connection holder did not start")
        pyz, flags = bundle_from(ref, tmp)  # measured as deployed: the zipapp, run as its launcher runs it
        if full_record:
            seed_full_record(sock + ".timeline")
        argv = [sys.executable, *flags, pyz, "serve", "--socket", sock, "--no-heartbeat", "--hold-seconds", str(hold)]
        if mode == "host" and os.geteuid() != 0:
            argv += ["--candidates", "user"]
        agent = r.popen(argv, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        pid = next(p for p in [agent.pid, *descendants(agent.pid)] if comm(p) == "wr-agent")
        time.sleep(warm_up)  # first-sight reads done
        c0, t0 = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)
        share = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
        rss = rss_kb(pid)
        sub = Sub(sock)
        if full_record:  # read the whole record once (paged replies), then the resident size again
            since = None
            for _ in range(64):
                ask = {"id": 2, "method": "timeline"} if since is None else {"id": 2, "method": "timeline",
                                                                             "since": since}
                sub.s.sendall(json.dumps(ask).encode() + b"\n")
                while True:
                    msg = json.loads(sub.f.readline())
                    if msg.get("id") == 2:
                        break
                since = msg["result"]["more_since"]
                if since is None:
                    break
            rss = max(rss, rss_kb(pid))
        busy, idle = [], []
        for _ in range(cycles):
            if sub.first["verdict"] != "IDLE":
                sub.wait_verdict("IDLE", 60)
            sub.first = {"verdict": "IDLE"}
            t = time.monotonic()
            burner = r.popen([sys.executable, "-c", BURN])
            busy.append(sub.wait_verdict("BUSY", 10) - t)
            time.sleep(0.5)
            r.kill(burner)
            t = time.monotonic()
            idle.append(sub.wait_verdict("IDLE", hold + 10) - t)
            time.sleep(1.2)
        server = r.popen([sys.executable, "-c", HOLDING_SERVER, sock + ".srv"], stdout=subprocess.PIPE)
        if server.stdout.readline().strip() != b"ready":
            raise RuntimeError("the holding server did not start")
        silent = []
        for _ in range(cycles):  # the verdict is IDLE here (the last cycle above waited for it)
            # sh waits for its step (wait()), the step for its go, then for the server's answer
            job = r.popen(["sh", "-c", '"$0" -c "$1" "$2"; true', sys.executable, SILENT_JOB, sock + ".srv"],
                          stdin=subprocess.PIPE)
            time.sleep(SLOW_WALK_MAX + 1.0)  # long after its start was seen, and after a full read or two
            t = time.monotonic()
            job.stdin.write(b"go\n")
            job.stdin.flush()
            silent.append(sub.wait_verdict("BUSY", 20) - t)
            r.kill(job)
            sub.wait_verdict("IDLE", hold + 30)
            time.sleep(1.2)
        return {"build": ref or "this tree", "mode": mode, "extra_sleepers": extra, "connections": connections,
                "chatty": chatty,
                "cpu_share_pct": round(share * 100, 3),
                "rss_mb": round(rss / 1024.0, 1), "time_to_busy_max_s": round(max(busy), 2),
                "time_to_idle_max_s": round(max(idle), 2), "hold_s": hold,
                "silent_wait_to_busy_max_s": round(max(silent), 2)}
    finally:
        r.close()
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0, help="CPU measuring window per run")
    ap.add_argument("--mode", choices=("ns", "host"), default="ns" if os.geteuid() == 0 else "host")
    ap.add_argument("--hold", type=float, default=5.0, help="hold seconds for the time-to-idle runs")
    ap.add_argument("--counts", default="20,500")
    ap.add_argument("--full-record", action="store_true",
                    help="start the agent with a why-awake record at its byte budget, and read it all once")
    ap.add_argument("--connections", type=int, default=0, help="established idle loopback connections")
    ap.add_argument("--chatty", action="store_true", help="one connection pings every second (gate open)")
    ap.add_argument("--quick", action="store_true", help="a few seconds: one small run, no figures asserted")
    ap.add_argument("--baseline", metavar="REF", help="also measure the agent at git REF, alternating with this one")
    ap.add_argument("--runs", type=int, default=1, help="runs of each build per count (with --baseline)")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.hold, args.counts = 1.0, 1.0, "20"
    rows = []
    builds = [args.baseline, None] if args.baseline else [None]
    for n in [int(x) for x in args.counts.split(",")]:
        for _ in range(args.runs):
            for ref in builds:
                row = measure(args.mode, n, args.seconds, args.hold, args.full_record, args.connections, args.chatty,
                              cycles=1 if args.quick else 3, warm_up=1.0 if args.quick else 3.0, ref=ref)
                rows.append(row)
                print(json.dumps(row), flush=True)
    chatty = " chatty" if args.chatty else ""
    print(f"\nmode={args.mode} window={args.seconds:g}s connections={args.connections}{chatty}"
          "  (goals: <=0.1% @500 with 200 idle connections, RSS<=16MB, busy<=1s for CPU work, <=5s for a new silent "
          "wait, idle<=hold+1s)")
    for row in rows:
        print(f"{row['build'][:12]:>12} {row['extra_sleepers']:4d} sleepers: "
              f"tick cost {row['cpu_share_pct']:.3f}% of a core, "
              f"RSS {row['rss_mb']:.1f} MB, time-to-busy <= {row['time_to_busy_max_s']:.2f} s, "
              f"time-to-idle <= {row['time_to_idle_max_s']:.2f} s (hold {row['hold_s']:g} s), "
              f"a silent wait busy <= {row['silent_wait_to_busy_max_s']:.2f} s")
    if args.baseline:
        for n in [int(x) for x in args.counts.split(",")]:
            for ref in builds:
                own = [r for r in rows if r["extra_sleepers"] == n and r["build"] == (ref or "this tree")]
                mine = sorted(r["cpu_share_pct"] for r in own)
                rss = max(r["rss_mb"] for r in own)
                print(f"median {ref or 'this tree'} @{n}: {mine[len(mine) // 2]:.3f}% of a core "
                      f"(runs {', '.join(f'{m:.3f}' for m in mine)}), RSS max {rss:.1f} MB")


if __name__ == "__main__":
    main()
