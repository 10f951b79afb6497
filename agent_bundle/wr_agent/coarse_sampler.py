"""Coarse sampler for hosts without /proc (the app's own Mac): process states and CPU from `ps`, every
few seconds instead of every tick. Only the CPU and uninterruptible-wait signals exist here; reasons say
"(coarse)" and the status says `"sampler": "coarse"`. The `ps` child is the agent's own and excluded."""

import os
import subprocess
import time

from wr_agent import exclusions
from wr_agent.proc_sampler import CPU_SHARE
from wr_agent.signals import Signals

PS_ARGV = ["ps", "-A", "-o", "pid=,ppid=,uid=,state=,time=,comm="]


def parse_cputime(text):
    """'[dd-]hh:mm:ss[.cc]' or 'mm:ss.cc' -> seconds."""
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [float(p) for p in text.split(":")]
    secs = 0.0
    for p in parts:
        secs = secs * 60 + p
    return days * 86400 + secs


def parse_ps(output):
    rows = []
    for line in output.splitlines():
        f = line.split(None, 5)
        if len(f) < 6:
            continue
        try:
            rows.append((f[0], f[1], int(f[2]), f[3], parse_cputime(f[4]), os.path.basename(f[5].strip())))
        except ValueError:
            continue
    return rows


class CoarseSampler(object):
    name = "coarse"
    tcp_kind = None  # no view of connections at all

    def __init__(self, every=5.0, only_uid=None, cpu_share=CPU_SHARE, self_pid=None, clock=time.monotonic,
                 runner=None, exclude_pids=()):
        self.every = every
        self.only_uid = only_uid
        self.cpu_share = cpu_share
        self.self_pid = str(os.getpid() if self_pid is None else self_pid)
        # Excluded with their descendants while they live: `ps` gives no start times, so a pid is held only
        # until a listing lacks it (a number handed out again later is another process).
        self.exclude_pids = frozenset(str(p[0] if isinstance(p, tuple) else p) for p in exclude_pids)
        self.clock = clock
        self.runner = runner or self._run_ps
        self.prev = {}
        self.prev_t = None
        self.last = Signals(coarse=True)
        self.next_at = 0.0

    @staticmethod
    def _run_ps():
        return subprocess.run(PS_ARGV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=5,
                              check=False).stdout.decode("utf-8", "replace")

    def sample(self, busy_hint=False):
        now = self.clock()
        if now < self.next_at:
            return self.last
        self.next_at = now + self.every
        try:
            rows = parse_ps(self.runner())
        except (OSError, subprocess.SubprocessError):
            return self.last
        sig = Signals(coarse=True)
        cur = {}
        by_pid = dict((r[0], r) for r in rows)
        gone = self.exclude_pids - frozenset(by_pid)
        if gone:
            self.exclude_pids = self.exclude_pids - gone  # forgotten (replaced whole: exclude() is another thread's)
        excluded_tree = {self.self_pid} | self.exclude_pids

        def tree_excluded(pid, depth=0):
            r = by_pid.get(pid)
            if r is None or depth > 64:
                return False
            if pid in excluded_tree or r[5] in exclusions.TREES:
                return True
            return tree_excluded(r[1], depth + 1)

        dt = None if self.prev_t is None else now - self.prev_t
        for pid, _ppid, uid, state, cpu, comm in rows:
            if pid in ("0", "1") or exclusions.is_daemon(comm) or state.startswith("Z"):
                continue
            if self.only_uid is not None and uid != self.only_uid:
                continue
            if tree_excluded(pid):
                continue
            key = (pid, comm)
            cur[key] = cpu
            sig.candidates += 1
            before = self.prev.get(key)
            if dt and before is not None and (cpu - before) / dt >= self.cpu_share:
                sig.cpu.append((comm, pid, (cpu - before) / dt))
            if state.startswith(("D", "U")):
                sig.dstate.append((comm, pid))
        self.prev, self.prev_t, self.last = cur, now, sig
        return sig

    def exclude(self, pid):
        """Leave out `pid` and its descendants from the next sample on (the app, connected directly)."""
        self.exclude_pids = self.exclude_pids | {str(pid)}

    def close(self):
        pass

    def shutdown(self):
        pass
