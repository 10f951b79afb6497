"""What the sampler reads of the box as a whole each tick (ProcSampler's part, docs/agent.md): whether the box did
anything at all since the last tick (its CPU counters), the newest keystroke on any pty and which ptys someone may be
watching, the bytes on the interfaces that cross the box's edge, and the TCP connections (tcp_diag, judged by
tcp_rule). A mixin of ProcSampler: it reads the sampler's processes and
state."""

import os

from wr_agent import job_wait, tcp_rule
from wr_agent.agent_log import log

# Seconds between reads of every quiet process while the box as a whole does nothing (`_system_quiet`): what a quiet
# process may do unseen (wake and block again, without CPU to speak of) is seen at most this late. A new silent wait
# is then a job's within SLOW_WALK + WAIT_MIN (5 s); CPU work is seen on its first tick, as before.
SLOW_WALK = 3.0
# The exact reads of the sockets that moved (`_tcp_moved_only`): at most this many, and the whole table at least every
# FULL_EVERY seconds while segments move (whatever the counters' sums could miss is seen that late at most).
MOVED_MAX, FULL_EVERY = 8, 10.0
MULTIPLEXER_CLIENTS = frozenset(("tmux: client", "screen"))  # tmux's client retitles itself; screen's is lowercase


def interface_counts(name, sys_net="/sys/class/net", default_routes=()):
    """Whether the network signal counts bytes on interface `name`: one that crosses the box's edge. Not lo,
    bridges, bridge ports, tun/tap, nor a link paired with or stacked on another (its `iflink` is not its own
    `ifindex`): a veth's end whatever its name (docker's `veth…`, Calico's `cali…`, a test box's host end), whose
    traffic is another network namespace's and is that namespace's own to judge, never a box-wide vote; a VLAN
    or macvlan, whose bytes its lower link counts already. An interface that holds a default route
    (`default_routes`) is the box's edge whatever it is: a container's or a test box's own `eth0` is a veth end.
    The health endpoint credits its own bytes only on these."""
    if name == "lo":
        return False
    if name in default_routes:
        return True
    base = sys_net + "/" + name
    if (name.startswith("veth") or os.path.exists(base + "/bridge") or os.path.exists(base + "/brport")
            or os.path.exists(base + "/tun_flags")):
        return False
    try:
        with open(base + "/iflink") as f:
            iflink = f.read().strip()
        with open(base + "/ifindex") as f:
            ifindex = f.read().strip()
    except OSError:
        return True
    return iflink == ifindex


def default_route_interfaces(net_dir="/proc/net"):
    """The interfaces that hold a default route in this network namespace (IPv4 and IPv6)."""
    found = set()
    try:
        with open(net_dir + "/route") as f:
            for line in f.read(1 << 16).split("\n")[1:]:
                f_ = line.split()
                if len(f_) > 7 and f_[1] == "00000000" and f_[7] == "00000000":
                    found.add(f_[0])
    except OSError:
        pass
    try:
        with open(net_dir + "/ipv6_route") as f:
            for line in f.read(1 << 16).split("\n"):
                f_ = line.split()
                if len(f_) == 10 and f_[0] == "0" * 32 and f_[1] == "00" and f_[9] != "lo":
                    found.add(f_[9])
    except OSError:
        pass
    return found


class HostSignals(object):
    """The box-wide signals of ProcSampler."""

    def _keystrokes(self):
        """(seconds since the newest keystroke on any pty or None, set of watched pty paths).

        Pty atime moves on reads of user input (kernel granularity 8 s, inside the 10 s window). A new pty's
        atime is its creation time (equal to its ctime): that is not a keystroke. A pty is watched when it
        had a keystroke within the watch window, or when a terminal multiplexer client is attached and its
        own terminal had one (output into panes nobody looks at is not work)."""
        self._pts_seen = set()
        try:
            names = os.listdir(self.pts)
        except OSError:
            return None, set()
        wall = self.wall()
        newest, watched = None, set()
        for n in names:
            if n.isdigit():
                path = self.pts + "/" + n
                dev_path = "/dev/pts/" + n
                self._pts_seen.add(dev_path)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if st.st_atime_ns <= st.st_ctime_ns:
                    continue  # never read since it was made (or had its mode changed)
                t = st.st_atime
                newest = t if newest is None else max(newest, t)
                if wall - t <= self.watch_window:
                    watched.add(dev_path)
        if watched and any(p.comm in MULTIPLEXER_CLIENTS and p.tty in watched for p in self._clients()):
            watched = self._pts_seen
        return (None if newest is None else max(0.0, wall - newest)), watched

    def _open_stat(self):
        if self._loadavg_fd is None:
            return None  # a /proc of another namespace or a recorded snapshot: read every process every tick
        try:
            return os.open(self.root + "/stat", os.O_RDONLY)
        except OSError:
            return None

    def _system_quiet(self, now):
        """Whether the box as a whole did too little since every process was last read (the last walk, within
        SLOW_WALK) for any process not read since to vote CPU: its busy CPU time over that span, from /proc/stat's
        first line less the agent's own, is under a candidate's CPU share of the span, and nothing waited on the
        disk (its iowait time did not move). Then a quick process, one that votes nothing by its state (`_quick`),
        is not read this tick: a read now would measure its CPU over the same span (its last read was the walk), at
        most the box's, so it could not vote; what it may have done (woken and blocked again) is seen at the next
        walk. Counted over the span, not the tick: a box whose own background comes in bursts (a supervisor's 30-50
        ms now and then) is still quiet on average. Steal, irq and softirq count as busy: a process's runtime may
        hold them (its schedstat runtime includes stolen time on a kernel without paravirt time accounting, its
        system time the interrupts that landed on it), and the bound must hold for every process. Costs one pread
        (~6 us) and a times() call."""
        fd = self._stat_fd
        if fd is None:
            return False
        try:
            f = os.pread(fd, 256, 0).split(b"\n", 1)[0].split()
            user, nice, system, _idle, iowait, irq, softirq, steal = (int(x) for x in f[1:9])
        except (OSError, ValueError):
            self._stat_now = None
            return False
        self._stat_now = (user + nice + system + irq + softirq + steal, iowait, sum(os.times()[:2]))
        base, walked = self._stat_walk, self._walked_at
        if base is None or self.thawed or walked is None or now - walked >= SLOW_WALK - job_wait.TICK_JITTER:
            return False
        busy, iowait, own = self._stat_now
        others = (busy - base[0]) / self.clk_tck - (own - base[2])
        return others < self.cpu_share * (now - walked) and iowait == base[1]

    def _clients(self):
        return [p for p in self.procs.values() if p.comm in MULTIPLEXER_CLIENTS]

    def _iface_counts(self, name):
        kind = self.if_kind.get(name)
        if kind is None:
            if self._routes is None:  # read once per net/dev read that meets a new interface
                self._routes = default_route_interfaces(self.root + "/net")
            kind = interface_counts(name, self.sys_net, self._routes)
        return kind

    def _net_bytes(self):
        try:
            raw = self._read_host("net/dev")
        except OSError:
            self.net_raw = None
            return 0
        if raw == self.net_raw:
            return 0  # not a packet on any interface (loopback's included) since the last read
        self.net_raw = raw
        total = 0
        self._routes = None
        kinds = {}  # the cache keeps only the interfaces of this read: each container start adds a veth
        for line in raw.decode("ascii", "replace").split("\n")[2:]:
            name, _, rest = line.partition(":")
            name = name.strip()
            if not name:
                continue
            counts = kinds[name] = self._iface_counts(name)
            if not counts:
                continue
            f = rest.split()
            try:
                total += int(f[0]) + int(f[8])
            except (IndexError, ValueError):
                continue
        self.if_kind = kinds
        prev, self.net_prev = self.net_prev, total
        return 0 if prev is None or total < prev else total - prev

    def _snmp_segments(self):
        """(InSegs, OutSegs, CurrEstab) of this network namespace (IPv4 and IPv6 share them), or None."""
        try:
            raw = self._read_host("net/snmp")
        except OSError:
            return None
        rows = [line.split() for line in raw.split(b"\n") if line.startswith(b"Tcp:")]
        if len(rows) < 2:
            return None
        d = dict(zip(rows[0][1:], rows[1][1:]))
        try:
            return int(d[b"InSegs"]), int(d[b"OutSegs"]), int(d[b"CurrEstab"])
        except (KeyError, ValueError):
            return None

    def _tcp_moved_only(self, counters, now):
        """The sockets that moved at the last read, read again one by one, when they account for every segment
        the namespace sent and received since: then no other socket moved and what the judge knows of the others
        holds. None: read every socket. The namespace counts a segment in once per packet as it arrives (InSegs)
        and a segment out unless it is a retransmission (OutSegs); a socket counts its own, retransmissions
        included and a merged packet as the segments it carries. So the sums are compared as the namespace counts:
        out, the sockets' segments less their retransmissions, exactly; in, exactly (a merged packet on one of
        them reads as a mismatch: the whole table, safe). The counters are read again after the lookups and must
        not have moved meanwhile (a segment on one of them between the two reads would count on one side only).
        A box with one chatty connection among hundreds of idle ones (a database pool, editors' sessions) reads
        one or two sockets a tick instead of all of them; every FULL_EVERY seconds, and whenever anything else
        moves or a connection opens or closes, the whole table."""
        prev, moved = self.tcp_counters, self.tcp_moved
        lookup = getattr(self.tcp_reader, "lookup", None)
        if (lookup is None or prev is None or counters is None or counters[2] != prev[2] or not moved
                or self.tcp_full_at is None or now - self.tcp_full_at >= FULL_EVERY):
            return None
        try:
            fresh = lookup(list(moved.values()))
        except (OSError, ValueError):
            return None  # whatever the lookup met, the whole table is read this tick
        if len(fresh) != len(moved) or any(c.inode not in moved or c.segs_in is None or c.retrans is None
                                           or c.state not in (tcp_rule.ESTABLISHED, tcp_rule.CLOSE_WAIT)
                                           for c in fresh):
            return None  # one closed or closing, or a new socket on its ports
        seg_in = seg_out = 0
        for c in fresh:
            was = moved[c.inode]
            seg_in += (c.segs_in - was.segs_in) & 0xFFFFFFFF
            seg_out += ((c.segs_out - was.segs_out) - (c.retrans - was.retrans)) & 0xFFFFFFFF
        if (seg_in, seg_out) != (counters[0] - prev[0], counters[1] - prev[1]) or self._snmp_segments() != counters:
            return None
        return fresh

    def _tcp(self, now):
        """This tick's TCP vote: [(comm, pid, reason text, facts)] for the connections that are work
        (tcp_rule). The gate: while no segment came in or went out (/proc/net/snmp), the last read's facts
        still hold (only their ages grow, which the judge computes), so a quiet box reads no socket."""
        if self.tcp_reader is None:
            return []
        # No packet on any interface since the net/dev read before the last snmp read (this tick's net/dev bytes
        # are those): the segment counters are what they were, and the 16 us read of every protocol's table is
        # not needed. Compared with the read before the last *snmp* read, not the last tick's: a tick where CPU
        # voted reads no socket, and what moved then must still be read after it.
        raw = self.net_raw
        if raw is not None and raw == self.snmp_dev and self.tcp_counters is not None:
            counters = self.tcp_counters
        else:
            counters, self.snmp_dev = self._snmp_segments(), raw
        if counters is not None and counters[2] == 0 and not self.tcp_judge.tracks:
            self.tcp_counters = counters
            return []
        if counters is None or counters != self.tcp_counters:
            read_at = self.clock()  # the ages in the facts count from the read, which starts now
            try:
                conns = self._tcp_moved_only(counters, read_at)
                some = conns is not None
                if not some:
                    conns = self.tcp_reader.read()
            except (OSError, ValueError) as exc:
                conns = None
                if self.tcp_error != str(exc):
                    self.tcp_error = str(exc)
                    log.warning("reading TCP sockets failed: %s; trying again next tick", exc)
            if conns is not None:
                self.tcp_error = None
                changed = self.tcp_judge.ingest(read_at, conns, some)
                self.tcp_counters = counters
                # Kept for the next tick's lookups only when few moved, with what the lookup needs.
                self.tcp_moved = ({} if len(changed) > MOVED_MAX or any(c.sockid is None or c.segs_in is None
                                                                        or c.retrans is None for c in changed)
                                  else dict((c.inode, c) for c in changed))
                if not some:
                    self.tcp_full_at = read_at
                    live = set(self.tcp_judge.tracks)
                    for ino in [i for i in self.inode_owner if i not in live]:
                        del self.inode_owner[ino]
        self._mapped = False
        hits, seen = [], {}
        for owner, track in self.tcp_judge.busy(now, self._owner_of, self.wall()):
            pid = owner[0]
            p = self.procs.get(pid)
            if p is None or self._to_own_child(pid, track):
                continue
            if pid in seen and seen[pid].busy_from <= track.busy_from:
                continue  # one reason per process: its connection busy the longest (stable across ticks)
            seen[pid] = track
        for pid, track in seen.items():
            comm = self.procs[pid].comm
            # since: when this busy streak began, on the sampler's clock (the agent's status clock)
            hits.append((comm, pid, tcp_rule.facts(track, round(track.busy_from, 1))))
        hits.sort(key=lambda h: int(h[1]))
        return hits
