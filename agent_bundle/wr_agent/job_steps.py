"""A job step waiting on a peer, as the sampler follows it (ProcSampler's part; the rule is job_wait.py, docs/agent.md
"A job waiting on a peer"): blocked processes looked at once per block, their waits voted while the block lasts and
the parent still waits; timer sleepers that are a step their parent waits for (a lock retried, paced output); and
which candidate owns a socket; and what a replacement agent is given of them (docs/agent.md, "A fresh agent
knows the jobs"). A mixin of ProcSampler: it reads the sampler's processes and state."""

import os

from wr_agent import file_locks, job_wait, netns_tcp, peer_turn, proc_entry, tcp_rule, unix_diag

OWNERS_KEPT = 256  # server ends whose holders are remembered
TURN_RECHECK = 5.0  # seconds between asking again who holds the turn on a wait counted as the server's
UNOWNED_RECHECK = 30.0  # seconds before a socket with no candidate owner is looked up again
KEPT_MAX = 4096  # processes whose knowledge a replacement agent is given


class JobSteps(object):
    """The job-step part of ProcSampler."""

    def _unix_reader(self):
        if self._unix is False:
            self._unix = unix_diag.open_reader()
        return self._unix

    def _wchan_of(self, pid):
        """A parent's wchan, kept while it has not run (its schedstat bytes unchanged): a supervisor or a shell
        with many children blocked is read once, not once per child's block."""
        p = self.procs.get(pid)
        mark = None if p is None or p.excluded else p.sched
        kept = self._parent_wchan.get(pid)
        if kept is not None and mark is not None and kept[0] == mark:
            return kept[1]
        try:
            wchan = self._read_once(self._path(pid, "wchan"), 128).decode("ascii", "replace").strip()
        except OSError:
            return None
        if mark is not None:
            self._parent_wchan[pid] = (mark, wchan)
        return wchan

    def _end_job_wait(self, pid, now, woke=False, idle=False):
        """The step's wait is over: its parent ran, or (`woke`) it ran itself. A wake ends a wait on a Unix socket
        (its wakes are all that is seen of its exchanges); a wait over TCP lasts through wakes (a keep-alive
        answered), as long as the connection rule sees no listener's repeat on it. Over another namespace's TCP,
        which the connection rule never sees, only through `idle` wakes (a timeout's, next to nothing done)."""
        entry = self.job_waits.pop(pid, None)
        if entry is None:
            return
        kept = []
        for w in entry[1]:
            if woke and (w.peer.exit or (w.peer.kind == "tcp" and (w.peer.netns is None or idle))):
                kept.append(w)
            else:
                self.job_memory.end(w, now)
        if kept:
            self.job_waits[pid] = (entry[0], kept, entry[2])

    def _netns_table(self, pid):
        """Where `pid` runs in another network namespace than the agent's, a reader of that namespace's TCP
        sockets (netns_tcp), else None."""
        if self._own_netns is False:
            self._own_netns = netns_tcp.netns_id(self.root, "self")
        other = netns_tcp.netns_id(self.root, pid)
        if other is None or self._own_netns is None or other == self._own_netns:
            return None
        return lambda: netns_tcp.table(self.root, pid)

    def _server_turn(self, inode, table=None):
        """Who holds the turn at the server end `inode` of a connection in this box (peer_turn). Its holders
        are found among the processes of the last listing once (a scan of their fd links), then kept while they
        still hold it: a wait counted as the server's is asked again every TURN_RECHECK seconds for as long as it
        lasts, and those asks read the holders' own files only. `table`: where the connection is another
        namespace's TCP (netns_tcp), its sockets. There an event loop that waits to read the client while it
        holds a connection of its own open to another peer (a database, an upstream API: awaiting it for this
        client, as asyncio and Node servers do) is not known rather than the client's turn: that namespace's
        table cannot say whether it asked the other peer for this client, and calling it a listener would let
        the box sleep under the request."""
        owners = self._unix_owners.get(inode)
        if owners:
            owners = peer_turn.socket_owners(self.root, owners, inode)  # still theirs?
        if not owners:
            owners = peer_turn.socket_owners(self.root, list(self.procs), inode)
        if len(self._unix_owners) >= OWNERS_KEPT:
            self._unix_owners = {}
        self._unix_owners[inode] = owners
        turn = peer_turn.turn_of(self.root, owners, inode) if owners else None
        if turn == peer_turn.CLIENT and table is not None and self._asks_elsewhere(owners, table):
            return None
        return turn

    def _asks_elsewhere(self, owners, table):
        """Whether one of `owners` holds a connection it opened, established, among `table`'s sockets."""
        for pid in owners:
            for ino in job_wait.socket_inodes("%s/%s/fd" % (self.root, pid)):
                s = table.get(ino)
                if s is not None and s.state == tcp_rule.ESTABLISHED and not s.inbound:
                    return True
        return False

    def _waking_steps(self, now, sig):
        """Timer sleepers that keep waking (a heartbeat, by their sleeps alone) and are a step their parent waits
        for. One retrying a file lock another process holds (file_locks: SQLite's busy handler) votes `lock` while
        it is held. One whose output goes into a pipe or a file and whose last wake wrote to it paces its work
        (a producer that sleeps between pages, feeding the next step) and votes `sleep`; one that wrote nothing
        at its last wake (a poller that found nothing new) or writes to a terminal (`watch`, a display) does not.
        Whether it is such a step is asked again every file_locks.RECHECK seconds per process; /proc/locks read
        once a tick at most, only when one is due."""
        kept, held = {}, None
        for comm, pid, _since, wakes in sig.timer_sleep:
            p = self.procs.get(pid)
            if not wakes or p is None:
                continue
            last = self._retries.get(pid)
            if last is None or last[0] != p.start or now - last[1] >= file_locks.RECHECK:
                locks = step = False
                if job_wait.waited_for(self.root, pid, p.ppid, self._wchan_of):
                    if held is None:
                        held = file_locks.held_locks(self.root)
                    locks = file_locks.locked_by_another(self.root, pid, held)
                    step = job_wait.writes_output(self.root, pid)
                if not step:
                    p.paced, p.wrote = None, False
                elif p.paced is None:
                    try:
                        p.paced = self._read_wchar(p)  # what it writes from its next wake on
                    except OSError:
                        p.paced = None  # gone: the next listing drops it
                last = (p.start, now, locks)
            kept[pid] = last
            if last[2]:
                sig.lock_wait.append((comm, pid))
            elif p.paced is not None and p.wrote:
                sig.paced.append((comm, pid))
        self._retries = kept

    def _tcp_cadence(self, owner, peer, now):
        """Whether the connection rule judged a long wait on this key a listener's repeat (a job worker's pop
        answered nothing and asked again), with no work by it since."""
        if peer.kind != "tcp":
            return False
        p = self.tcp_judge.peers.get((owner, peer.peer, peer.port, False))
        return (p is not None and p.beat_at is not None and now - p.beat_at <= job_wait.RETURN_GAP
                and (p.work_at is None or p.work_at < p.beat_at))

    def _job_waits(self, now, sig):
        """Blocked processes that are a step their job waits on, holding a connection to a peer (job_wait): looked
        at once per block, WAIT_MIN after it began; voted while the block lasts and the parent still waits."""
        looked_at = job_wait.WAIT_MIN - job_wait.TICK_JITTER
        for pid, p in list(self.job_due.items()):
            if p.excluded or self.procs.get(pid) is not p or p.state != "S" or p.timer is not None:
                del self.job_due[pid]
                self._end_job_wait(pid, now)
                continue
            woken = now - p.ran_at < looked_at
            if woken and (p.block_from is None or now - p.block_from < looked_at):
                continue
            del self.job_due[pid]
            if woken:
                # In the same wait since block_from, through wakes that did next to nothing (a timeout's): looked at
                # once for that wait, and only its TCP connections are taken (a wait over TCP lasts through wakes;
                # on a Unix socket a wake is all that is seen of an exchange, so there it is a new block).
                if p.looked_from == p.block_from:
                    continue
                p.looked_from = p.block_from
            peers = job_wait.find_peers(self.root, pid, p.ppid, self.tcp_judge.tracks, self.tcp_judge.listen_inodes,
                                        self._unix_reader(), self._wchan_of, self._server_turn, p.comm,
                                        self._netns_table(pid))
            if woken:
                peers = [peer for peer in peers if peer.kind == "tcp"]
            found = set(peer.inode for peer in peers)
            # waits over TCP that lasted through its wakes, on connections it still waits on
            kept = [w for w in self.job_waits.pop(pid, (None, []))[1] if w.peer.inode in found]
            known = set(w.peer.inode for w in kept)
            owner = (pid, p.start)
            began = p.block_from if woken else p.ran_at
            waits = kept + [self.job_memory.begin(owner, peer, began, self._tcp_cadence(owner, peer, now))
                            for peer in peers if peer.inode not in known]
            if waits:
                parent = self.procs.get(p.ppid)
                self.job_waits[pid] = (p, waits, None if parent is None else parent.ran_at)
        voted = set(h[1] for h in sig.tcp)
        for pid, (p, waits, parent_ran) in list(self.job_waits.items()):
            parent = self.procs.get(p.ppid)
            if parent is not None and parent.ran_at != parent_ran and not all(w.peer.exit for w in waits):
                # The parent ran: it may have stopped waiting. Looked at again next tick.
                self._end_job_wait(pid, now)
                self.job_due[pid] = p
                p.looked_from = None
                continue
            for w in waits:
                due = now - w.checked >= TURN_RECHECK
                if due and (w.peer.turn == peer_turn.SERVER or w.peer.netns is not None):
                    w.checked = now
                table = None
                if due and w.peer.netns is not None:
                    # Another namespace's table, read once for both questions below (it costs with every socket of
                    # the host): the connection's own file, and both where the server beside it is asked again.
                    names = ("tcp", "tcp6") if w.peer.server is not None else (w.peer.netns[1],)
                    table = netns_tcp.table(self.root, w.peer.netns[0], names)
                if due and w.peer.turn == peer_turn.SERVER:
                    # The server may have finished with it and be waiting for the client again (a subscriber whose
                    # server was busy elsewhere when first looked at): asked again every TURN_RECHECK seconds.
                    turn = self._server_turn(w.peer.server, table)
                    # A person's session counts only while the server is known to hold its request (find_peers).
                    w.counted = turn == peer_turn.SERVER if w.peer.person else turn != peer_turn.CLIENT
                if w.counted and not w.peer.sure() and self._tcp_cadence(w.owner, w.peer, now):
                    w.counted = False  # the connection rule saw it ask again with no work between: a listener
                if not w.counted or pid in voted:
                    continue
                if w.peer.kind == "tcp" and w.peer.netns is None:
                    t = self.tcp_judge.tracks.get(w.peer.inode)
                    if t is None or t.state != tcp_rule.ESTABLISHED:
                        continue
                elif w.peer.kind == "tcp" and table is not None:
                    # Another namespace's connection, still there? Its table costs with every socket of the host, so
                    # read every TURN_RECHECK only (a close or reset wakes the step, which ends the wait anyway).
                    t = table.get(w.peer.inode)
                    if t is None or t.state != tcp_rule.ESTABLISHED:
                        w.counted = False
                        continue
                if w.peer.kind == "tcp":
                    sig.tcp.append((p.comm, pid, w.peer.facts(round(w.start, 1))))
                else:
                    sig.unix.append((p.comm, pid, w.peer.facts(round(w.start, 1))))
                voted.add(pid)

    def _to_own_child(self, pid, track):
        """Whether `track` is a connection from `pid` to a process of its own making in this box (a notebook
        server's ZMQ sockets to the kernel it started): that child's own signals say whether it works, and a
        subscription it never answers (the server's SUB to the kernel's PUB) is no request of a job."""
        if track.inbound:
            return False
        for other in self.tcp_judge.tracks.values():
            if other.lport == track.pport and other.pport == track.lport and other.peer == track.peer:
                child = self._owner_of(other.inode)
                q = self.procs.get(child[0]) if child is not None else None
                for _ in range(64):
                    if q is None:
                        return False
                    if q.ppid == pid:
                        return True
                    q = self.procs.get(q.ppid)
                return False
        return False

    def _owner_of(self, inode):
        """(pid, start) of the candidate owning this socket, or None. Looked up by scanning candidates' fd
        links at most once a tick, only for sockets the judge asks about; a socket of a non-candidate (sshd)
        is looked up again after UNOWNED_RECHECK seconds."""
        o = self.inode_owner.get(inode)
        now = self.clock()
        if isinstance(o, str):
            p = self.procs.get(o)
            if p is not None and not p.excluded and p.state != "Z":
                return (o, p.start)
        elif isinstance(o, tuple) and now - o[1] < UNOWNED_RECHECK:
            return None
        if self._mapped:
            self.inode_owner[inode] = (None, now)
            return None
        self._mapped = True
        self._map_sockets(set(self.tcp_judge.tracks), now)
        o = self.inode_owner.get(inode)
        if isinstance(o, str):
            p = self.procs[o]
            return (o, p.start)
        return None

    def _map_sockets(self, wanted, now):
        found = {}
        for pid, p in self.procs.items():
            if p.excluded or p.state == "Z":
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
                    try:
                        ino = int(target[8:-1])
                    except ValueError:
                        continue
                    if ino in wanted:
                        found[ino] = pid
        for ino in wanted:
            self.inode_owner[ino] = found.get(ino, (None, now))

    # -- what a replacement agent goes on from (docs/agent.md, "A fresh agent knows the jobs") -------------------
    def knowledge(self):
        """What this sampler knows of waiting processes that a fresh agent could not see at its first look, keyed
        "pid:start" (a reused pid is another process): [kind, woke, since]. kind: "timer" (a timer sleep), "lock",
        "fifo" or "wait" (blocked elsewhere, perhaps a job step waiting on a peer); woke: it was seen to wake from
        a timer sleep (a heartbeat); since: when its block began (monotonic), None once it woke. Only facts that
        change when the process does, so the file is rewritten only then."""
        out = {}
        for pid, p in self.procs.items():
            if p.excluded or p.state != "S" or p.start is None or p.ran_at is None:
                continue
            kind = p.timer or ("wait" if pid in self.job_waits else None)
            if kind is None:
                continue
            woke = p.wakes > 0
            out["%s:%s" % (pid, p.start)] = [kind, woke, None if woke else round(p.ran_at, 3)]
            if len(out) >= KEPT_MAX:
                break
        return out

    def recall(self, kept):
        """Go on from what an agent before this one knew (`knowledge`, read back): applied to each process at its
        first look, if it is still the same process (pid and start time) and still blocked."""
        self._kept = {}
        for key, entry in (kept or {}).items():
            try:
                pid, start = key.split(":", 1)
                kind, woke, since = entry
                self._kept[(pid, float(start))] = (
                    str(kind), bool(woke), None if since is None else float(since))
            except (AttributeError, TypeError, ValueError):
                continue
            if len(self._kept) >= KEPT_MAX:
                break

    def _recall_one(self, p, kept, wchan):
        """A process the last agent knew, at its first look here. A timer sleeper frozen with the box, or whose
        sleep restarted after the thaw, shows no timer in its wchan (`get_signal`, `do_syscall_64`): the last
        agent's word that it was in a timer sleep stands, and so does whether it was seen to wake (a heartbeat)
        and when its block began (a `sleep 400 && build` is not a new sleep because the agent is new)."""
        kind, woke, since = kept
        if kind == "timer" and (p.timer == "timer" or proc_entry.held(wchan) == "held"):
            p.timer = "timer"
            p.wakes = 1 if woke else 0
        elif kind != (p.timer or "wait"):
            return  # blocked in something else now: what was known is not about this block
        if since is not None and not woke and since <= p.ran_at:
            p.ran_at = since
