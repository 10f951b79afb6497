"""Linux sampler: reads /proc incrementally, no forks.

Per candidate and tick the cheap path is one pread of /proc/PID/schedstat on a held fd (the leader's
runtime): a leader that did not run cannot have changed its state or wchan, so stat and wchan are read
again only when it ran (or when the process has other threads, whose CPU only stat sums). Static facts
(comm, exclusion, ancestry, tty) are read once per process; a held fd also pins the process, so a reused
PID reads as gone (ESRCH) instead of as the old process. /proc/net/tcp(6) is read only when no cheaper
signal already voted BUSY, and fd links only when an ESTABLISHED socket has no known owner.
"""

import errno
import os
import resource
import time

from wr_agent import exclusions
from wr_agent.signals import Signals

PF_KTHREAD = 0x00200000
FD_RESERVE = 64
UNOWNED_RECHECK = 30.0  # seconds before an ESTABLISHED socket with no candidate owner is looked up again


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


class _Proc(object):
    __slots__ = (
        "comm",
        "excluded",
        "fds",
        "last",
        "pid",
        "ppid",
        "runtime",
        "start",
        "state",
        "threads",
        "ticks",
        "timer",
        "tree",
        "tty",
        "wchar",
    )

    def __init__(self, pid, comm, ppid):
        self.pid, self.comm, self.ppid = pid, comm, ppid
        self.excluded = self.tree = False
        self.fds = {}
        self.runtime = self.ticks = None
        self.threads = 1
        self.state = "?"
        self.timer = None
        self.tty = False
        self.wchar = None
        self.last = 0.0
        self.start = None


def _parse_stat(raw):
    """(comm, fields after the comm) from a /proc/PID/stat line (comm may hold spaces and parens)."""
    text = raw.decode("utf-8", "replace")
    lo, hi = text.find("("), text.rfind(")")
    return text[lo + 1:hi], text[hi + 2:].split()


class ProcSampler(object):
    """Sampler over a /proc tree. `root`, `sys_net` and `pts` are parameters for recorded snapshots."""

    name = "proc"

    def __init__(self, root="/proc", sys_net="/sys/class/net", pts="/dev/pts", self_pid=None,
                 only_uid=None, cpu_share=0.05, clock=time.monotonic, wall=time.time):
        self.root, self.sys_net, self.pts = root, sys_net, pts
        self.self_pid = str(os.getpid() if self_pid is None else self_pid)
        self.only_uid = only_uid
        self.cpu_share = cpu_share
        self.clock, self.wall = clock, wall
        self.clk_tck = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self.procs = {}
        self.fd_budget = max(0, _raise_nofile() // 2 - FD_RESERVE)
        self.fds_held = 0
        self.inode_owner = {}  # ESTABLISHED socket inode -> pid string or (None, time looked up)
        self.tcp_counters = None  # (ActiveOpens, PassiveOpens, CurrEstab) from /proc/net/snmp
        self.est_prev = None
        self.if_kind = {}
        self.net_prev = None
        self.has_schedstat = None

    # -- file helpers -------------------------------------------------------------------------------------
    def _path(self, pid, name):
        return "%s/%s/%s" % (self.root, pid, name)

    def _read_once(self, path, size=4096):
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, size)
        finally:
            os.close(fd)

    @staticmethod
    def _read_all(path, limit=1 << 24):
        """A whole (possibly long) /proc file, in 64 KiB reads rather than one huge buffer."""
        fd = os.open(path, os.O_RDONLY)
        try:
            parts, size = [], 0
            while size < limit:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                parts.append(chunk)
                size += len(chunk)
            return b"".join(parts)
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

    def _drop(self, pid):
        p = self.procs.pop(pid, None)
        if p is not None:
            for fd in p.fds.values():
                os.close(fd)
            self.fds_held -= len(p.fds)
            p.fds = {}

    def close(self):
        for pid in list(self.procs):
            self._drop(pid)

    # -- process discovery --------------------------------------------------------------------------------
    def _uptime(self):
        try:
            return float(self._read_once(self.root + "/uptime", 128).split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _new(self, pid, now, depth=0):
        try:
            comm, f = _parse_stat(self._read_once(self._path(pid, "stat")))
            ppid, flags = f[1], int(f[6])
        except (OSError, ValueError, IndexError):
            return None
        p = _Proc(pid, comm, ppid)
        p.state, p.ticks, p.threads = f[0], int(f[11]) + int(f[12]), int(f[17])
        p.start = float(f[19]) / self.clk_tck
        p.last = now
        parent = self.procs.get(ppid)
        if parent is None and depth < 64 and ppid not in ("0", pid):
            parent = self._new(ppid, now, depth + 1)
            if parent is not None:
                self.procs[ppid] = parent
        p.tree = comm in exclusions.TREES or bool(parent is not None and parent.tree)
        if not p.tree and exclusions.USER_COMMANDS:  # the user's "never work" commands (read once per process)
            p.tree = exclusions.command_excluded(self._argv(pid))
        p.excluded = (p.tree or pid == "1" or pid == self.self_pid or bool(flags & PF_KTHREAD)
                      or exclusions.is_daemon(comm))
        if not p.excluded and self.only_uid is not None:
            try:
                p.excluded = os.stat("%s/%s" % (self.root, pid)).st_uid != self.only_uid
            except OSError:
                return None
        if not p.excluded:
            p.tty = self._on_tty(pid)
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
                return True
        return False

    # -- per-tick sampling ---------------------------------------------------------------------------------
    def sample(self, busy_hint=False):
        """One tick's Signals. `busy_hint`: a cheaper signal already voted BUSY, skip the TCP lookup."""
        now = self.clock()
        sig = Signals()
        try:
            names = os.listdir(self.root)
        except OSError:
            names = []
        present = set()
        uptime = None
        for pid in names:
            if not pid.isdigit():
                continue
            present.add(pid)
            p = self.procs.get(pid)
            fresh = p is None
            if fresh:
                p = self._new(pid, now)
                if p is None:
                    continue
                self.procs[pid] = p
            if p.excluded:
                continue
            try:
                if fresh:
                    if uptime is None:
                        uptime = self._uptime()
                    self._first_look(p, sig, uptime)
                else:
                    self._look(p, now, sig)
            except OSError as exc:
                if exc.errno in (errno.ESRCH, errno.ENOENT):
                    self._drop(pid)
                    present.discard(pid)
                    continue
                raise
            if p.state == "Z":
                continue
            sig.candidates += 1
            if p.state == "D":
                sig.dstate.append((p.comm, pid))
            elif p.state == "S" and p.timer:
                sig.timer_sleep.append((p.comm, pid))
        for pid in [q for q in self.procs if q not in present]:
            self._drop(pid)
        sig.keystroke_age = self._keystroke_age()
        sig.net_bytes = self._net_bytes()
        if not (busy_hint or sig.cpu or sig.dstate or sig.timer_sleep):
            sig.tcp = self._tcp(now)
        return sig

    def _first_look(self, p, sig, uptime):
        runtime = self._runtime(p)
        p.runtime = runtime
        if uptime is not None and p.start is not None:
            # No previous sample: use the share since the process started (a burner is BUSY at once).
            age = max(uptime - p.start, 1.0 / self.clk_tck)
            share = p.ticks / self.clk_tck / age
            if share >= self.cpu_share:
                sig.cpu.append((p.comm, p.pid, share))
        if p.state == "S":
            p.timer = self._wchan(p)
        if p.tty:
            p.wchar = self._wchar(p)

    def _runtime(self, p):
        if self.has_schedstat is False:
            return None
        try:
            return int(self._read(p, "schedstat", 128).split()[0])
        except OSError as exc:
            if exc.errno == errno.ENOENT and self.has_schedstat is None:
                self.has_schedstat = False
                return None
            raise
        except (ValueError, IndexError):
            return None

    def _look(self, p, now, sig):
        dt = now - p.last
        p.last = now
        runtime = self._runtime(p)
        ran = runtime is None or runtime != p.runtime
        if ran or p.threads > 1:
            _, f = _parse_stat(self._read(p, "stat"))
            ticks = int(f[11]) + int(f[12])
            if p.threads == 1 and runtime is not None and p.runtime is not None:
                share = (runtime - p.runtime) / 1e9 / dt if dt > 0 else 0.0
            else:
                share = (ticks - p.ticks) / self.clk_tck / dt if dt > 0 else 0.0
            p.state, p.ticks, p.threads = f[0], ticks, int(f[17])
            if share >= self.cpu_share:
                sig.cpu.append((p.comm, p.pid, share))
            if ran:
                p.timer = self._wchan(p) if p.state == "S" else False
        p.runtime = runtime
        if p.tty:
            w = self._wchar(p)
            if w is not None and p.wchar is not None and w > p.wchar:
                sig.tty_bytes += w - p.wchar
            p.wchar = w

    def _wchan(self, p):
        try:
            return self._read(p, "wchan", 128).decode("ascii", "replace").strip() in exclusions.TIMER_WCHANS
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                return False
            raise

    def _wchar(self, p):
        try:
            for line in self._read(p, "io", 512).split(b"\n"):
                if line.startswith(b"wchar:"):
                    return int(line.split()[1])
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                p.tty = False
                return None
            raise
        return None

    # -- host-wide signals ---------------------------------------------------------------------------------
    def _keystroke_age(self):
        """Pty atime moves on reads of user input (kernel granularity 8 s, inside the 10 s window)."""
        try:
            names = os.listdir(self.pts)
        except OSError:
            return None
        newest = None
        for n in names:
            if n.isdigit():
                try:
                    t = os.stat(self.pts + "/" + n).st_atime
                except OSError:
                    continue
                newest = t if newest is None else max(newest, t)
        return None if newest is None else max(0.0, self.wall() - newest)

    def _iface_counts(self, name):
        kind = self.if_kind.get(name)
        if kind is None:
            base = self.sys_net + "/" + name
            kind = not (name == "lo" or name.startswith("veth") or os.path.exists(base + "/bridge")
                        or os.path.exists(base + "/brport") or os.path.exists(base + "/tun_flags"))
            self.if_kind[name] = kind
        return kind

    def _net_bytes(self):
        try:
            raw = self._read_once(self.root + "/net/dev", 65536)
        except OSError:
            return 0
        total = 0
        for line in raw.decode("ascii", "replace").split("\n")[2:]:
            name, _, rest = line.partition(":")
            name = name.strip()
            if not name or not self._iface_counts(name):
                continue
            f = rest.split()
            try:
                total += int(f[0]) + int(f[8])
            except (IndexError, ValueError):
                continue
        prev, self.net_prev = self.net_prev, total
        return 0 if prev is None or total < prev else total - prev

    def _snmp_tcp(self):
        """(ActiveOpens, PassiveOpens, CurrEstab) of this network namespace (IPv4 and IPv6), or None."""
        try:
            raw = self._read_once(self.root + "/net/snmp", 65536)
        except OSError:
            return None
        rows = [line.split() for line in raw.split(b"\n") if line.startswith(b"Tcp:")]
        if len(rows) < 2:
            return None
        d = dict(zip(rows[0][1:], rows[1][1:]))
        try:
            return int(d[b"ActiveOpens"]), int(d[b"PassiveOpens"]), int(d[b"CurrEstab"])
        except (KeyError, ValueError):
            return None

    def _established_cached(self):
        """ESTABLISHED inodes. The tcp tables cost the kernel a walk of the global hash (~1 ms), so they
        are read only when /proc/net/snmp says a connection was opened or closed since the last read."""
        counters = self._snmp_tcp()
        if counters is not None and counters[2] == 0:
            est = set()
        elif counters is not None and counters == self.tcp_counters and self.est_prev is not None:
            est = self.est_prev
        else:
            est = self._established()
        self.tcp_counters, self.est_prev = counters, est
        return est

    def _established(self):
        inodes = set()
        for name in ("net/tcp", "net/tcp6"):
            try:
                raw = self._read_all(self.root + "/" + name)
            except OSError:
                continue
            for line in raw.split(b"\n")[1:]:
                f = line.split()
                if len(f) > 9 and f[3] == b"01" and f[9] != b"0":
                    inodes.add(f[9].decode())
        return inodes

    def _tcp(self, now):
        est = self._established_cached()
        owners = self.inode_owner
        for ino in [i for i in owners if i not in est]:
            del owners[ino]
        stale = False
        for ino in est:
            o = owners.get(ino)
            if o is None:
                stale = True
            elif isinstance(o, tuple):
                stale = stale or now - o[1] >= UNOWNED_RECHECK
            elif o not in self.procs:
                stale = True
        if stale:
            self._map_sockets(est, now)
        hits, seen = [], set()
        for ino in est:
            o = owners.get(ino)
            if isinstance(o, str) and o not in seen:
                p = self.procs.get(o)
                if p is not None and not p.excluded and p.state != "Z":
                    seen.add(o)
                    hits.append((p.comm, o))
        return hits

    def _map_sockets(self, est, now):
        found = {}
        for pid, p in self.procs.items():
            if p.excluded:
                continue
            fddir = self._path(pid, "fd")
            try:
                fds = os.listdir(fddir)
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink(fddir + "/" + fd)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    ino = target[8:-1]
                    if ino in est:
                        found[ino] = pid
        for ino in est:
            self.inode_owner[ino] = found.get(ino, (None, now))
