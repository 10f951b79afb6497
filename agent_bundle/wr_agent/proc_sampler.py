"""Linux sampler: reads /proc incrementally, no forks.

Per candidate and tick the cheap path is one pread of /proc/PID/schedstat on a held fd (the leader's
runtime), compared as bytes with the last read: a leader that did not run cannot have changed its state or
wchan, so stat and wchan are read again only when it ran (or when the process has other threads, whose CPU
only stat sums). /proc itself is listed only when a process may have appeared: the last pid the kernel
handed out (/proc/loadavg, for the reader's own PID namespace, so only where /proc is that namespace's) moved,
or every FULL_SCAN_SECONDS; between, the processes of the last listing are read, and one that is gone reads
as gone (ESRCH on its held fd). Static facts (comm, exclusion, ancestry, tty) are read once per process; a
held fd also pins the process, so a reused PID reads as gone (ESRCH) instead of as the old process. TCP
sockets are read (tcp_diag: sock_diag netlink, else /proc/net/tcp{,6}) on every tick where neither CPU nor D
state voted, only when segments moved since the last read, and fd links only for a connection that may count
and has no known owner.
"""

import errno
import os
import resource
import time

from wr_agent import clocks, exclusions, job_wait, own_flows, proc_entry, tcp_diag, tcp_rule
from wr_agent.classifier import GAP_SECONDS
from wr_agent.host_signals import HostSignals
from wr_agent.job_steps import JobSteps
from wr_agent.proc_entry import Proc
from wr_agent.signals import Signals

PF_KTHREAD = 0x00200000
FD_RESERVE = 64
# Positions in the fields after the comm of /proc/PID/stat (man 5 proc numbers them from 1: state is (3)).
STAT_STATE, STAT_PPID, STAT_FLAGS = 0, 1, 6
STAT_UTIME, STAT_STIME, STAT_CUTIME, STAT_CSTIME = 11, 12, 13, 14
STAT_THREADS, STAT_STARTTIME = 17, 19
CPU_SHARE = 0.05  # a candidate using this share of a core (over CPU_WINDOW, or a tick) is work
CPU_WINDOW = 10.0  # seconds over which a candidate's CPU (with its reaped children) is judged
WATCH_WINDOW = 600.0  # pty output counts only on a pty with a keystroke (or an attached client) this recent
REAPER_ARMED = 2 * CPU_WINDOW  # seconds another user's reaper counts after its last candidate child was seen
# A wake from a wait with a timeout that used less than this and went back to the same wait: the wait goes on
# (curl's poll wakes every second for its timers, about 0.1 ms each, while the answer it asked for is not come).
IDLE_WAKE_CPU = 0.002
# Seconds between listings of /proc while no pid was handed out: drops what is gone among the processes never
# read (excluded ones), and tries again one that could not be read when it was listed.
FULL_SCAN_SECONDS = 30.0


def _raise_nofile():
    """Held fds need headroom: lift the soft RLIMIT_NOFILE toward the hard limit (capped)."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 16384 if hard == resource.RLIM_INFINITY else min(hard, 16384)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        return soft
    except (ValueError, OSError):
        return 1024


class ProcSampler(HostSignals, JobSteps):
    """Sampler over a /proc tree. `root`, `sys_net` and `pts` are parameters for recorded snapshots."""

    name = "proc"

    def __init__(self, root="/proc", sys_net="/sys/class/net", pts="/dev/pts", self_pid=None,
                 only_uid=None, cpu_share=CPU_SHARE, clock=time.monotonic, wall=time.time, exclude_pids=(),
                 cpu_window=CPU_WINDOW, watch_window=WATCH_WINDOW, tick_seconds=1.0, tcp_reader="auto",
                 gap_clock=clocks.suspend_aware):
        self.root, self.sys_net, self.pts = root, sys_net, pts
        self.self_pid = str(os.getpid() if self_pid is None else self_pid)
        self.only_uid = only_uid
        self.cpu_share = cpu_share
        self.cpu_window, self.watch_window, self.tick_seconds = cpu_window, watch_window, tick_seconds
        self.last_sample = None
        self._rescan = False
        self.clock, self.wall = clock, wall
        # The box was frozen or suspended between two ticks (the agent itself did not tick for GAP_SECONDS, on a
        # clock that counts suspend): a process seen to have run since was woken by the thaw, not by itself.
        self.gap_clock = gap_clock
        self._gap_mark = None
        self.thawed = False
        self.clk_tck = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self.procs = {}
        self.fd_budget = max(0, _raise_nofile() // 2 - FD_RESERVE)
        self.fds_held = 0
        # Excluded with their descendants: {pid: its start time}, so a pid the kernel hands out again later
        # (the app disconnected, a build got its number) is not left out with it.
        self.exclude_pids = {}
        for spec in exclude_pids:  # a pid, or (pid, start time or None) from --exclude-pid PID[:START]
            if isinstance(spec, tuple):
                self.exclude(*spec)
            else:
                self.exclude(spec)
        self.inode_owner = {}  # socket inode -> pid string or (None, time looked up)
        self.tcp_counters = None  # (InSegs, OutSegs, CurrEstab) from /proc/net/snmp at the last read
        self.tcp_moved = {}  # inode -> Conn, the sockets that moved at the last read (HostSignals._tcp_moved_only)
        self.tcp_full_at = None  # when every socket was last read
        # sock_diag netlink where the kernel answers, else /proc/net/tcp{,6} ("coarse"), else none.
        self.tcp_reader = tcp_diag.open_reader(root) if tcp_reader == "auto" else tcp_reader
        self.tcp_kind = None if self.tcp_reader is None else self.tcp_reader.kind
        # The app's own SSH connections, accounted by connection (they need tcp_info's byte counters): their bytes
        # are never the box's network work (own_flows). Its own reader: the TCP judge's reads are gated apart.
        self.own_flows = None
        if self.tcp_kind == "sock_diag" and tcp_reader == "auto":
            try:
                self.own_flows = own_flows.OwnFlows(tcp_diag.open_reader(root), proc=root)
            except (OSError, ValueError, AttributeError):
                self.own_flows = None
        self.tcp_judge = tcp_rule.Judge()
        self.tcp_error = None
        self._mapped = False
        self.if_kind = {}  # interface name -> counts (box-crossing), for those in the last read
        self.net_prev = None
        self.net_raw = None  # /proc/net/dev as last read: the same bytes mean no packet on any interface since
        self.snmp_dev = None  # net_raw when /proc/net/snmp was last read (HostSignals._tcp)
        self.has_schedstat = None
        self._pts_seen = set()
        # The gate on listing /proc: loadavg's last pid, held open, where /proc is this process's PID namespace.
        self._loadavg_fd = self._open_loadavg()
        self._stat_fd = self._open_stat()  # the box's CPU counters (`_system_quiet`), where /proc is the real one
        self._stat_now = None  # (busy CPU ticks, iowait ticks, the agent's own CPU s) read this tick
        self._stat_walk = None  # the same, read on the tick of the last walk
        self._walked_at = None  # when every listed process was last read
        self._last_pid = None
        self._listed = None  # the candidates (Proc) of the last listing, in its order; None: list next tick
        self._slow_listed, self._quick_count = (), 0  # the last full read's candidates not quick; how many are
        self._listed_at = None
        self._host_fds = {}  # loadavg's sibling files read every tick (net/dev, net/snmp), held open: pread(0)
        # A job step waiting on a peer (job_wait): processes that ran and blocked, looked at once they have been
        # blocked WAIT_MIN; those found waiting, until they run again.
        self.job_due = {}
        self.job_waits = {}  # pid -> (Proc, [job_wait.Wait], the parent's ran_at when looked at)
        self.job_memory = job_wait.Memory()
        self._unix_owners = {}  # server-end inode -> the processes holding it, as last found
        self._kept = {}  # (pid, start) -> what an agent before this one knew of the process (recall)
        self._routes = None  # interfaces with a default route, read when an interface is first met
        self.reapers = {}  # pid -> Proc whose reaped-children time is read on listing ticks (_reaped)
        self._parent_wchan = {}  # pid -> (its schedstat bytes, wchan) for parents of blocked processes
        self._retries = {}  # pid -> (start, when last asked, waits on a lock another holds) for waking steps
        self._unix = None if root != "/proc" else False  # unix_diag reader, opened at first need (False: not yet)
        self._own_netns = False  # the agent's network namespace (job_steps._netns_table), read at first need

    # -- file helpers -------------------------------------------------------------------------------------
    def _path(self, pid, name):
        return "%s/%s/%s" % (self.root, pid, name)

    def _read_once(self, path, size=4096):
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, size)
        finally:
            os.close(fd)

    def _read(self, p, name, size=1024):
        """Read a per-process file through a held fd when the budget allows. Raises OSError if gone."""
        fd = p.fds.get(name)
        if fd is None:
            if self.fds_held >= self.fd_budget:
                return self._read_once(self._path(p.pid, name), size)
            fd = os.open(self._path(p.pid, name), os.O_RDONLY)
            p.fds[name] = fd
            self.fds_held += 1
        return os.pread(fd, size, 0)

    def _read_host(self, name, size=65536):
        """A host-wide /proc file (`net/dev`: this network namespace's, fixed at open) through a held fd: the
        kernel makes it afresh on every read from offset 0. Raises OSError; a failed fd is opened again."""
        fd = self._host_fds.get(name)
        if fd is None:
            fd = self._host_fds[name] = os.open(self.root + "/" + name, os.O_RDONLY)
        try:
            return os.pread(fd, size, 0)
        except OSError:
            del self._host_fds[name]
            os.close(fd)
            raise

    def _open_loadavg(self):
        """A held fd on <root>/loadavg when its last-pid field counts the pids this /proc lists: the reader's
        own PID namespace is the one /proc was mounted for (/proc/self/status's NSpid has one entry, our pid).
        Elsewhere (a /proc of another namespace, a kernel before NSpid, a recorded snapshot) None: list always."""
        try:
            status = self._read_once(self.root + "/self/status", 4096)
            fd = os.open(self.root + "/loadavg", os.O_RDONLY)
        except OSError:
            return None
        for line in status.split(b"\n"):
            if line.startswith(b"NSpid:"):
                if line.split()[1:] == [str(os.getpid()).encode()]:
                    return fd
                break
        os.close(fd)
        return None

    def _pids_unchanged(self, now):
        """Whether no pid was handed out since the last tick (so no process can have appeared), and the last
        listing is recent enough to go by. Read before listing, so a process made after it is seen next tick."""
        fd = self._loadavg_fd
        if fd is None:
            return False
        try:
            last = os.pread(fd, 128, 0).rsplit(None, 1)[-1]
        except (OSError, IndexError):
            return False
        same, self._last_pid = last == self._last_pid, last
        return (same and self._listed is not None and self._listed_at is not None
                and now - self._listed_at < FULL_SCAN_SECONDS)

    def _drop(self, pid):
        self.reapers.pop(pid, None)
        self._parent_wchan.pop(pid, None)
        self.job_due.pop(pid, None)
        self.job_waits.pop(pid, None)
        p = self.procs.pop(pid, None)
        if p is not None and not p.excluded and p.ticks is not None:
            parent = self.procs.get(p.ppid)
            if parent is not None and parent.reaper:
                parent.reaper[1] += p.ticks + p.children  # seen already: not unseen work when it is reaped
        if p is not None:
            for fd in p.fds.values():
                os.close(fd)
            self.fds_held -= len(p.fds)
            p.fds = {}
            p.quick = None
            p.excluded = True  # never read again: the last listing's list may still hold it

    def close(self):
        """Forget every process (and close their fds); the TCP reader stays open for the next tick."""
        for pid in list(self.procs):
            self._drop(pid)
        self._listed = None
        self._slow_listed, self._quick_count = (), 0

    def shutdown(self):
        self.close()
        if self.tcp_reader is not None:
            self.tcp_reader.close()
        if self.own_flows is not None:
            self.own_flows.reader.close()
        if self._unix:
            self._unix.close()
            self._unix = None
        for name in ("_loadavg_fd", "_stat_fd"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        for fd in self._host_fds.values():
            os.close(fd)
        self._host_fds = {}

    def exclude(self, pid, start=None):
        """Leave out `pid` and its descendants from now on (called from the server thread when the app
        subscribes directly). With `start`, only if the process with that number is the one that started
        then. Known processes are looked at afresh on the next tick; dead pids are pruned."""
        pid = str(pid)
        current = self._start_time(pid)
        if current is None or self.exclude_pids.get(pid) == current:
            return  # already gone, or already left out
        if start is not None and str(start) != current:
            return  # that number belongs to another process now
        start = current
        kept = {p: t for p, t in self.exclude_pids.items() if self._start_time(p) == t}
        kept[pid] = start
        self.exclude_pids = kept  # replaced whole: the tick thread reads it without a lock
        self._rescan = True

    def _start_time(self, pid):
        """The process's start time in clock ticks since boot (with the pid, its identity), or None if gone."""
        try:
            return proc_entry.parse_stat(self._read_once(self._path(pid, "stat")))[1][STAT_STARTTIME]
        except (OSError, ValueError, IndexError):
            return None

    # -- process discovery --------------------------------------------------------------------------------
    def _owned(self, pid):
        try:
            return os.stat("%s/%s" % (self.root, pid)).st_uid == self.only_uid
        except OSError:
            return False

    def _uptime(self):
        try:
            return float(self._read_once(self.root + "/uptime", 128).split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _new(self, pid, now, depth=0):
        try:
            comm, f = proc_entry.parse_stat(self._read_once(self._path(pid, "stat")))
            ppid, flags = f[STAT_PPID], int(f[STAT_FLAGS])
        except (OSError, ValueError, IndexError):
            return None
        p = Proc(pid, comm, ppid)
        p.state, p.ticks, p.threads = f[STAT_STATE], int(f[STAT_UTIME]) + int(f[STAT_STIME]), int(f[STAT_THREADS])
        p.children = int(f[STAT_CUTIME]) + int(f[STAT_CSTIME])
        p.start = float(f[STAT_STARTTIME]) / self.clk_tck
        p.last = now
        parent = self.procs.get(ppid)
        if parent is None and depth < 64 and ppid not in ("0", pid):
            parent = self._new(ppid, now, depth + 1)
            if parent is not None:
                self.procs[ppid] = parent
        p.tree = (comm in exclusions.TREES or self.exclude_pids.get(pid) == f[STAT_STARTTIME]
                  or bool(parent is not None and parent.tree))
        if not p.tree and exclusions.USER_COMMANDS:  # the user's "never work" commands (read once per process)
            p.tree = exclusions.command_excluded(self._argv(pid))
        p.excluded = (p.tree or pid == "1" or pid == self.self_pid or bool(flags & PF_KTHREAD)
                      or exclusions.is_daemon(comm))
        if not p.excluded and self.only_uid is not None:
            try:
                p.excluded = os.stat("%s/%s" % (self.root, pid)).st_uid != self.only_uid
            except OSError:
                return None
            if p.excluded:
                p.reaper = []  # another user's: read as a reaper once a candidate child of it is seen
        if pid == "1" and not p.tree:
            if self.only_uid is None or self._owned(pid):
                p.reaper = [p.children, 0]
                self.reapers[pid] = p
            else:  # init of a box shared with other users reaps everyone's orphans: read once a candidate child is seen
                p.reaper = []
        if not p.excluded and parent is not None and parent.reaper == []:
            parent.reaper = [None, 0]  # its reaped time is read from the next listing on
            parent.shared = True
            self.reapers[ppid] = parent
        if not p.excluded:
            p.tty = self._on_tty(pid)
            if comm == "sleep":
                p.endless = self._endless_sleep(pid)
        return p

    def _argv(self, pid):
        try:
            raw = self._read_once(self._path(pid, "cmdline"))
        except OSError:
            return []
        return [a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0")] if raw else []

    def _on_tty(self, pid):
        for fd in ("1", "2"):
            try:
                target = os.readlink(self._path(pid, "fd/" + fd))
            except OSError:
                continue
            if target.startswith("/dev/pts/") or target.startswith("/dev/tty"):
                return target
        return None

    def _endless_sleep(self, pid):
        """`sleep infinity` keeps a container or a session alive; no job step ever follows it."""
        try:
            args = self._read_once(self._path(pid, "cmdline"), 256).split(b"\0")[1:]
        except OSError:
            return False
        return any(a.lower() in (b"inf", b"infinity") for a in args)

    # -- per-tick sampling ---------------------------------------------------------------------------------
    def sample(self, busy_hint=False):
        """One tick's Signals. `busy_hint`: a cheaper signal already voted BUSY, skip the TCP lookup."""
        now = self.clock()
        sig = Signals()
        since, self.last_sample = self.last_sample, now
        mark = self.gap_clock()
        self.thawed = self._gap_mark is not None and mark - self._gap_mark >= GAP_SECONDS
        self._gap_mark = mark
        if self._rescan:
            self._rescan = False
            self.close()  # exclusions are decided when a process is first seen
        tty_out = {}  # pty path -> output bytes this tick
        quiet = self._system_quiet(now)
        if self._pids_unchanged(now):
            # No pid handed out since: the same processes, or fewer. On a quiet box the quick ones are not read.
            self._read_listed(now, sig, tty_out, skip_quick=quiet)
        else:
            self._list(now, since, sig, tty_out)
            quiet = False
        if not quiet:
            self._walked_at, self._stat_walk = now, self._stat_now
        sig.keystroke_age, watched = self._keystrokes()
        sig.tty_bytes = sum(n for path, n in tty_out.items() if path in watched or path not in self._pts_seen)
        sig.net_bytes = self._net_bytes()
        if sig.cpu:  # work by these processes: their next long wait on a connection is a first one again
            owners = frozenset((pid, self.procs[pid].start) for _c, pid, _s in sig.cpu if pid in self.procs)
            self.tcp_judge.note_work(owners, now)
            self.job_memory.note_work(owners, now)
        # CPU and D state always vote (the operation hint too); whatever else a tick holds, a timer sleep a
        # daemon keeps between checks included, the connections are judged.
        if not (busy_hint or sig.cpu or sig.dstate):
            sig.tcp = self._tcp(now)
            self._job_waits(now, sig)
            self._waking_steps(now, sig)
        return sig

    def _list(self, now, since, sig, tty_out):
        """List /proc: new processes get their first look, known ones their tick's read, gone ones are dropped."""
        procs = self.procs
        self._slow_listed, self._quick_count = self._listed or (), 0  # until the listing ends (`_partition`)
        try:
            names = os.listdir(self.root)
        except OSError:
            names = []
        present, listed = set(), []
        self._listed_at = now
        uptime = None
        for pid in names:
            if not pid.isdigit():
                continue
            present.add(pid)
            p = procs.get(pid)
            fresh = p is None
            if fresh:
                p = self._new(pid, now)
                if p is None:
                    self._listed_at = None  # could not be read: list again next tick
                    continue
                procs[pid] = p
            if p.excluded:
                continue
            try:
                if fresh:
                    if uptime is None:
                        uptime = self._uptime()
                    self._first_look(p, sig, uptime, now, since)
                    self._quick(p)
                else:
                    self._read_known(p, now, sig, tty_out)
            except OSError as exc:
                if exc.errno in (errno.ESRCH, errno.ENOENT):
                    self._drop(pid)
                    present.discard(pid)
                    continue
                raise
            if not p.excluded:
                listed.append(p)
                self._vote(p, now, sig)
        for pid in [q for q in procs if q not in present]:
            self._drop(pid)
        self._listed = listed
        self._partition()
        self._reaped(now, sig)

    def _reaped(self, now, sig):
        """CPU of processes that lived between two ticks, reaped by a parent that is no candidate (PID 1 reaping
        orphans, a root script forking a user's tools under `--candidates user`): its reaped-children time grew
        by more than the known children it outlived had used. Read only when listing (a process was made)."""
        parents = None
        for p in self.reapers.values():
            r = p.reaper
            if p.shared:
                if parents is None:
                    parents = {q.ppid for q in (self._listed or ())}
                if p.pid in parents:
                    p.armed = now
            try:
                f = proc_entry.parse_stat(self._read_once(self._path(p.pid, "stat")))[1]
                children = int(f[STAT_CUTIME]) + int(f[STAT_CSTIME])
            except (OSError, ValueError, IndexError):
                continue
            unseen = 0 if r[0] is None else max(0, children - r[0] - r[1])
            if p.shared and (p.armed is None or now - p.armed > REAPER_ARMED):
                unseen = 0  # no candidate child of it for a while: what it reaped was other users' work
            r[0], r[1] = children, 0
            dt = now - p.last
            p.last = now
            if unseen or p.window:
                self._judge_cpu(p, now, dt, unseen / self.clk_tck, sig)

    def _read_listed(self, now, sig, tty_out, pread=os.pread, skip_quick=False):
        """The tick's read of the last listing's candidates (in its order). `_read_known`'s common case is written
        out here: it is most of the agent's cost. A quick process votes nothing by its state (`_quick`), so it only
        counts; `skip_quick` (the box is quiet): it is not even read (its next read measures its CPU over the whole
        time since: its `last` stays), and the walk is of those not quick at the last full read (`_partition`)."""
        vote, listed, quiet = self._vote, self._listed, 0
        if skip_quick:
            quiet = self._quick_count
            listed = self._slow_listed
        else:  # until this read ends (one cut short by an error): a quiet tick walks them all, as before
            self._slow_listed, self._quick_count = listed, 0
        for p in listed:
            if p.excluded:
                continue  # gone since (dropped), or found to be one of ours
            try:
                fd = p.quick
                if fd is not None and skip_quick:
                    quiet += 1
                    continue
                if fd is not None:
                    raw = pread(fd, 128, 0)
                    if raw == p.sched:
                        p.last = now
                        quiet += 1
                        continue
                    self._look(p, now, sig, tty_out, raw)
                    self._quick(p)
                else:
                    self._read_known(p, now, sig, tty_out)
            except OSError as exc:
                if exc.errno in (errno.ESRCH, errno.ENOENT):
                    self._drop(p.pid)
                    continue
                raise
            if not p.excluded:
                vote(p, now, sig)
        sig.candidates += quiet
        if not skip_quick:
            self._partition()

    def _partition(self):
        """After a read of every candidate: the quick (a quiet tick skips them) and the others (it walks them)."""
        listed = self._listed or ()
        self._quick_count = sum(1 for p in listed if p.quick is not None and not p.excluded)  # counted, not read
        self._slow_listed = [p for p in listed if p.quick is None]

    def _read_known(self, p, now, sig, tty_out, pread=os.pread):
        """One tick of a known candidate. The common case is one pread: the same schedstat bytes as last time
        mean it did not run, and a quick process (`_quick`) then has nothing else to read (what `_look` would
        do for it: nothing but note the time)."""
        fd = p.quick
        if fd is not None:
            raw = pread(fd, 128, 0)
            if raw == p.sched:
                p.last = now
                return
            self._look(p, now, sig, tty_out, raw)
        else:
            self._look(p, now, sig, tty_out)
        self._quick(p)

    def _quick(self, p):
        """A process is quick while a tick in which it did not run changes nothing of it but the time: one
        thread (else stat sums the others' CPU), off a tty (else its output is read), no CPU in its window
        (else the window moves on), and a state that votes nothing (not a zombie, not D, not a timer sleep,
        whose length grows, nor a fifo wait). Set after every look, as those facts change only then."""
        state, timer = p.state, p.timer
        plain = state != "Z" and state != "D" and not (
            state == "S" and (timer in ("fifo", "lock") or (timer == "timer" and not p.endless)))
        p.quick = (p.fds.get("schedstat") if plain and p.threads == 1 and p.tty is None and p.window is None
                   and p.sched is not None and not p.excluded else None)

    @staticmethod
    def _vote(p, now, sig):
        """What a looked-at candidate adds to the tick: it counts, and its state may vote."""
        state = p.state
        if state == "Z":
            return
        sig.candidates += 1
        if state == "D":
            sig.dstate.append((p.comm, p.pid))
        elif state == "S":
            if p.timer == "timer" and not p.endless:
                sig.timer_sleep.append((p.comm, p.pid, max(0.0, now - p.ran_at), p.wakes))
            elif p.timer == "fifo":
                sig.fifo_wait.append((p.comm, p.pid))
            elif p.timer == "lock" and now - p.ran_at >= job_wait.WAIT_MIN - job_wait.TICK_JITTER:
                sig.lock_wait.append((p.comm, p.pid))

    def _first_look(self, p, sig, uptime, now, since):
        runtime = self._runtime(p)
        p.runtime = runtime
        # The state came from the stat read before the runtime. A process that ran its last instructions between
        # the two (a fork that exec'd `cat` and blocked opening a FIFO) never runs again to refresh it, so a stale
        # "R" (or the shell's name) would stand for ever: read the stat again, after the runtime.
        try:
            comm, f = proc_entry.parse_stat(self._read_once(self._path(p.pid, "stat")))
            p.comm, p.state = comm, f[STAT_STATE]
        except (ValueError, IndexError):
            comm = p.comm  # unreadable now: keep what the first read said
        if exclusions.is_daemon(comm):
            p.excluded = True
            return
        p.ran_at = now
        if uptime is not None and p.start is not None:
            age = max(uptime - p.start, 0.0)
            p.born = now - age
            if since is not None and p.born >= since:
                # Started since the last tick: it has not run since it began its sleep, if it sleeps
                # (the `sleep 5` a shell loop runs), and its CPU so far belongs in the window.
                p.ran_at = p.born
            cpu = (p.ticks + p.children) / self.clk_tck
            if age <= self.cpu_window:
                if cpu > 0:
                    p.window = [(now, cpu)]
                share = cpu / max(age, self.tick_seconds)
            else:
                # An older process: its share over its whole life is a window longer than ours.
                share = p.ticks / self.clk_tck / age
            if share >= self.cpu_share:
                sig.cpu.append((p.comm, p.pid, share))
        if p.state == "S":
            wchan = self._wchan_name(p)
            p.timer = proc_entry.kind(wchan)
            kept = self._kept.pop((p.pid, p.start), None) if self._kept else None
            if kept is not None:
                self._recall_one(p, kept, wchan)
            if p.timer is None:
                self.job_due[p.pid] = p
        if p.tty:
            p.wchar = self._wchar(p)

    def _runtime(self, p, raw=None):
        """The leader's runtime (ns) from its schedstat (`raw`: already read this tick); keeps the bytes."""
        p.sched = None
        if self.has_schedstat is False:
            return None
        try:
            if raw is None:
                raw = self._read(p, "schedstat", 128)
            fields = raw.split()
            runtime = int(fields[0])
            p.slices = int(fields[2]) if len(fields) > 2 else None
        except OSError as exc:
            if exc.errno == errno.ENOENT and self.has_schedstat is None:
                self.has_schedstat = False
                return None
            raise
        except (ValueError, IndexError):
            return None
        p.sched = raw
        return runtime

    def _look(self, p, now, sig, tty_out, raw=None):
        dt = now - p.last
        p.last = now
        before = p.ran_at
        slices = p.slices
        runtime = self._runtime(p, raw)
        ran = runtime is None or runtime != p.runtime
        frozen = False
        looked, wchan = False, None  # this look's wchan, once read (it is read once a look at most)
        moved = ran and (p.slices is None or p.slices != slices)
        if (moved or p.unsure) and p.timer == "timer" and not self.thawed:
            # The box's freeze trapped a sleeper, or its sleep went on after a thaw or a SIGCONT with its time left:
            # it ran into the trap or the restart, not awake, and it is the same sleep. Caught runnable (a thaw
            # wakes the whole box at once; under load the sleeper waits for a CPU before it restarts), it is
            # neither yet: the next look says which.
            looked, wchan = True, self._wchan_name(p)
            held = proc_entry.held(wchan)
            p.unsure = held == "runnable"
            frozen = held in ("held", "runnable")
            if not frozen:
                moved = True  # blocked elsewhere, or in a new sleep: it woke (perhaps a tick ago, while unsure)
                if not ran:  # settled since an unsure look without running again: where it sleeps now
                    p.timer = proc_entry.kind(wchan)
        if moved and not self.thawed and not frozen:
            # Put on a CPU again since the last look. A runtime that moved with the same count is the tail of a
            # run the last look caught under way (its runtime read before it ended): the process went to sleep
            # then and has not run since, so a `sleep 20` first seen just as it began is not a wake. Nor is a run
            # across a gap in the agent's own ticks: the box's freeze and thaw wakes every sleeper (the kernel's
            # freezer, then the sleep restarted with its time left), and `sleep 400 && build` read as a daemon's
            # next sleep after a thaw let the box sleep again under the job.
            p.ran_at = now
            if p.timer == "timer":
                p.wakes += 1
                if p.paced is not None:
                    w = self._read_wchar(p)
                    p.wrote = w is not None and w > p.paced
                    p.paced = w
        if ran or p.threads > 1:
            comm, f = proc_entry.parse_stat(self._read(p, "stat"))
            p.comm = comm  # an exec renames it (`exec tmux attach` becomes "tmux: client")
            if exclusions.is_daemon(comm):
                # Named itself one of ours (a relay, the installer's probe) after it was first seen as python3.
                p.excluded = True
                return
            ticks = int(f[STAT_UTIME]) + int(f[STAT_STIME])
            children = int(f[STAT_CUTIME]) + int(f[STAT_CSTIME])
            if p.threads == 1 and runtime is not None and p.runtime is not None:
                cpu = (runtime - p.runtime) / 1e9
            else:
                cpu = (ticks - p.ticks) / self.clk_tck
            # Children reaped since the last tick: a short compile that lived between two ticks.
            cpu += max(0, children - p.children) / self.clk_tck
            p.state, p.ticks, p.children, p.threads = f[STAT_STATE], ticks, children, int(f[STAT_THREADS])
            self._judge_cpu(p, now, dt, cpu, sig)
            if ran and (self.thawed or frozen) and p.state in ("S", "R") and p.timer is not None:
                # Frozen in its sleep, or the same sleep restarted with its time left: its wchan names no sleep now
                # (the trap's `get_signal`; the restart's frames are the scheduler's, so `do_syscall_64`), so what
                # it was blocked in stands, and so does its state (runnable for a moment, on its way back to it).
                p.state = "S"
            elif ran:
                where = None
                if p.state != "S":
                    p.timer = None
                else:
                    where = wchan if looked else self._wchan_name(p)
                    p.timer = proc_entry.kind(where)
                # A wake that went back to the same wait with a timeout, having done next to nothing: the wait
                # goes on (a job step's look is made for it once it has lasted WAIT_MIN).
                idle = (p.timer is None and where is not None and where == p.where
                        and where.startswith(exclusions.POLL_WCHANS) and cpu <= IDLE_WAKE_CPU)
                p.block_from = (p.block_from if p.block_from is not None else before) if idle else None
                p.where = where
                if p.pid in self.job_waits and not self.thawed:  # a thaw's wake ends no wait (above)
                    self._end_job_wait(p.pid, now, woke=True, idle=idle)
                if p.state == "S" and p.timer is None:
                    self.job_due[p.pid] = p
        elif p.window:
            self._judge_cpu(p, now, dt, 0.0, sig)
        p.runtime = runtime
        if p.tty:
            w = self._wchar(p)
            if w is not None and p.wchar is not None and w > p.wchar:
                tty_out[p.tty] = tty_out.get(p.tty, 0) + w - p.wchar
            p.wchar = w

    def _judge_cpu(self, p, now, dt, cpu, sig):
        """Vote when this tick's share AND the share over the window (including reaped children) reach the
        threshold: a blip of 50 ms every 10 s is 0.5 % of a core, not work, though one tick shows 5 %."""
        window = p.window or []
        if cpu > 0:
            window.append((now, cpu))
        while window and window[0][0] <= now - self.cpu_window:
            window.pop(0)
        p.window = window or None
        if dt <= 0 or cpu / dt < self.cpu_share:
            return
        span = self.cpu_window
        if p.born is not None:
            span = max(min(span, now - p.born), self.tick_seconds)
        if sum(c for _, c in window) / span >= self.cpu_share:
            sig.cpu.append((p.comm, p.pid, cpu / dt))

    def _wchan_name(self, p):
        """What the process is blocked in (its wchan), or None where it may not be read."""
        try:
            return self._read(p, "wchan", 128).decode("ascii", "replace").strip()
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                return None
            raise

    def _wchar(self, p):
        w = self._read_wchar(p)
        if w is None:
            p.tty = None
        return w

    def _read_wchar(self, p):
        """Bytes the process has written (/proc/PID/io), or None where it may not be read."""
        try:
            for line in self._read(p, "io", 512).split(b"\n"):
                if line.startswith(b"wchar:"):
                    return int(line.split()[1])
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                return None
            raise
        return None
