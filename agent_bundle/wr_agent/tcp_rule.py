"""When a TCP connection is work (docs/agent.md, "Connections"): judged per connection from the kernel's
facts (tcp_diag), never from the connection merely being open.

A connection is work while
* a request is outstanding: on a connection this end opened, it sent and has heard nothing back for
  WAIT_MIN seconds or more (a query, a model call thinking); on one it accepted, a request came in and is
  not answered yet;
* an answer is arriving: pieces come in at most ANSWER_GAP apart with this end silent between them (a
  token stream, a trickling download);
* bytes move on it at MOVE_RATE or more as a flow: on MOVE_READS reads over MOVE_SPAN seconds or more (a burst,
  however big, is an exchange: a poll's listing, a page load). On a connection this end accepted, only what was
  asked flows as work: the client's own bytes (a request, an upload), and this end's while it owes an answer (from
  the client's data until this end's bytes stop for ANSWER_GAP). A server pushing unasked to an open client (an
  editor's presence and telemetry to its tab, a dev server's echoes) is a listener's chatter, however fast;
* its send queue holds unsent bytes on two reads in a row and the peer took some within QUEUE_STALL (an
  upload behind a slow receiver).
A long wait on a key whose last long wait ended with no work since (no bytes moving, no stream, no queue,
no CPU by that process), after at most RETURN_GAP of silence, is a listener's heartbeat (a long poll answered
"nothing", a keep-alive ping): only the first counts. It is keyed by process and peer (the
peer's port outbound, the local port inbound), not by socket, so a listener that reconnects is not new. A
client's cadence on a connection this end serves is a heartbeat from the start: a request that comes in at most
RETURN_GAP after this end's last answer on that connection and that the server does nothing with (no CPU vote,
no send on another of its connections since it came: a browser's ping no dev server answers, a notebook's poll)
is no wait to count.

Pure: the facts and the clock come in, the busy connections go out, so it is unit-tested on a fake clock.
"""

import collections

WAIT_MIN = 2.0  # seconds a request waits before it counts (an exchange answered sooner is no wait)
ANSWER_GAP = 8.0  # seconds: pieces of an answer at most this far apart are one answer still arriving
MOVE_RATE, MOVE_WINDOW = 500.0, 3.0  # bytes/s over seconds, as the interface signal
# A flow, not a burst: bytes moved on at least this many reads spread over at least MOVE_SPAN seconds of the window.
# A poll's answer, a listing, a page load move in one or two reads, however many bytes they carry.
MOVE_READS, MOVE_SPAN = 3, 1.5
QUEUE_STALL = 60.0  # a full send queue whose peer took nothing this long is a stuck peer, not an upload
RETURN_GAP = 60.0  # a long wait on a key whose last one ended with no work since, after at most this much silence
REPLY_WINDOW = 0.2  # seconds: inbound data this soon after this end's send is the peer's reply, not a request
# Seconds: a send this soon after data the peer pushed unasked is this end's reply (a pong, ssh's CHANNEL_CLOSE
# confirming the server's), not a request. Wider than REPLY_WINDOW: on a loaded box the reply waits for a CPU.
PUSH_REPLY = 1.0
# Seconds: two reads of one wait's start that differ less than this are the same wait. A wait is tracked only
# once it is WAIT_MIN long, so the next one starts at least that much later; below it, a read's lateness.
SAME = 1.5
PEERS_MAX = 4096  # heartbeat memory, oldest forgotten first
# An SSH client's connection (outbound to these ports) has no request outstanding in this rule's sense: SSH confirms
# a channel request at once however long its command runs, and its last message is often a send never answered (the
# CHANNEL_CLOSE confirming the server's, late on a loaded box). Its work is its bytes (a flow, an answer arriving, a
# queue), its keystrokes, and a job waiting on it (job_wait): read as a request, an idle tunnel was busy for ever.
SSH_PORTS = frozenset((22,))

ESTABLISHED, CLOSE_WAIT, LISTEN = 1, 8, 10


def facts(conn, since):
    """The facts of a busy connection for its reason (wr_agent.reasons, class tcp): which peer, and since when
    (`since`: the sampler's clock, the agent's status clock, when the wait began). They never change while it
    stays busy (status events are pushed on every change of the reasons, and the timeline splits on them): no
    durations, no byte counts; the app counts the time from `since`. No peer names: a lookup would block the
    tick. An inbound connection also says which of our ports it came to."""
    out = {"peer": conn.peer, "port": conn.pport, "since": since}
    if conn.inbound:
        out["local_port"] = conn.lport
    return out


class _Wait(object):
    __slots__ = ("counted", "key", "start")

    def __init__(self, start, key, counted):
        self.start, self.key, self.counted = start, key, counted


class Track(object):
    """What the judge remembers of one socket between reads (absolute times on the sampler's clock)."""

    __slots__ = (
        "acked_at",
        "busy_from",
        "bytes_in",
        "bytes_out",
        "inbound",
        "inode",
        "lport",
        "moved",
        "moved_at",
        "out_at",
        "out_at_piece",
        "owed",
        "owed_at",
        "peer",
        "piece_at",
        "pport",
        "push_at",
        "queued_reads",
        "recv_ago",
        "recv_at",
        "sent_ago",
        "sent_at",
        "since",
        "state",
        "stream_until",
        "tail_until",
        "wait",
        "wqueue",
    )

    def __init__(self, c, inbound):
        self.inode, self.inbound = c.inode, inbound
        self.peer, self.pport, self.lport = c.peer, c.pport, c.lport
        self.bytes_in = self.bytes_out = None
        # (time, bytes moved since the read before) that count as a flow, over MOVE_WINDOW; None while there is
        # none (an empty deque is about 600 bytes: at 400 idle connections, most of what the tracks held).
        self.moved = None
        self.moved_at = None  # when bytes last moved either way
        # Inbound: this end owes the client an answer (its data came in; this end's bytes have not stopped since).
        # First seen with the client's bytes already in: a request came before this read, owed.
        self.owed, self.owed_at = False, None
        self.out_at = None  # inbound: when this end's bytes last moved (on a read that saw them)
        self.piece_at = None  # when the last piece of data came in
        self.out_at_piece = None  # this end's byte counter at the read that saw it
        self.stream_until = None
        self.tail_until = None  # the answer that ended a counted wait: still that request's, for ANSWER_GAP
        self.push_at = None  # when data last came in unasked (the connection was not waiting): a server's ping
        self.state = self.sent_ago = self.recv_ago = self.sent_at = self.recv_at = None
        self.queued_reads = 0
        self.acked_at = None
        self.wqueue = None
        self.wait = None
        self.busy_from = self.since = None  # the current busy streak: when it began (clock, wall)

    def update(self, now, c):
        asked = self.state is None or self.wait_start() is not None  # as the last read left it
        self.state = c.state
        self.sent_ago, self.recv_ago = c.sent_ago, c.recv_ago
        self.sent_at = None if c.sent_ago is None else now - c.sent_ago / 1000.0
        self.recv_at = None if c.recv_ago is None else now - c.recv_ago / 1000.0
        if c.bytes_in is not None and c.bytes_out is not None:
            if self.bytes_in is not None:
                d_in, d_out = max(0, c.bytes_in - self.bytes_in), max(0, c.bytes_out - self.bytes_out)
                if d_in or d_out:
                    flow = self._asked(now, d_in, d_out)
                    if flow:
                        if self.moved is None:
                            self.moved = collections.deque()
                        self.moved.append((now, flow))
                if d_out:
                    self.acked_at = now
                if d_in and self.recv_at is not None:
                    self._piece(self.recv_at, quiet=c.bytes_out == self.out_at_piece)
                    self.out_at_piece = c.bytes_out
                    if not asked:
                        self.push_at = self.recv_at
            else:
                if self.recv_at is not None:
                    self.piece_at, self.out_at_piece = self.recv_at, c.bytes_out
                if self.inbound and c.bytes_in:
                    self.owed = True
                    self.owed_at = self.moved_at = now
            self.bytes_in, self.bytes_out = c.bytes_in, c.bytes_out
        unsent = c.notsent if c.notsent is not None else c.wqueue  # the fallback has the queue only
        if unsent > 0:
            self.queued_reads += 1
            if c.notsent is None and c.wqueue != self.wqueue:
                self.acked_at = now  # the fallback's progress: the queue changed
            if self.acked_at is None:
                self.acked_at = now
        else:
            self.queued_reads = 0
        self.wqueue = c.wqueue

    def _asked(self, now, d_in, d_out):
        """The bytes of this read that may count toward a flow. Outbound, all of them (this end asked, or is the
        one sending). Inbound, the client's bytes, and this end's while it owes an answer: the client's data makes
        an answer owed, unless it came while this end was already sending unasked (a tab acknowledging pushes:
        this end's bytes moved on an earlier read, less than ANSWER_GAP ago, with nothing owed); a silence of
        ANSWER_GAP both ways after this end began to answer ends what was owed (a request still waiting for its
        first byte stays owed, however long). A request and the start of its answer in one read are a request."""
        if not self.inbound:
            self.moved_at = now
            return d_in + d_out
        if (self.owed and self.out_at is not None and self.out_at >= self.owed_at
                and now - self.moved_at > ANSWER_GAP):
            self.owed = False  # answered, then silent both ways: the exchange is over
        pushing = not self.owed and self.out_at is not None and now - self.out_at <= ANSWER_GAP
        if d_in and not pushing and not self.owed:
            self.owed, self.owed_at = True, now
        self.moved_at = now
        if d_out:
            self.out_at = now
        return d_in + (d_out if self.owed else 0)

    def _piece(self, at, quiet):
        """A piece of data came in at `at`: an answer still arriving if the last one was recent and this
        end sent nothing since the read that saw the last one (`quiet`: its byte counter did not move; a ping answered
        every few seconds is not a stream). Counters, not times: times from two reads differ by how late
        each read was, and under load that is more than the gap between a request and its first piece."""
        prev = self.piece_at
        if prev is not None and at - prev <= ANSWER_GAP and quiet:
            self.stream_until = at + ANSWER_GAP
        self.piece_at = at

    def wait_start(self):
        """When the outstanding request began (this end's last send outbound, the peer's inbound), or None.

        The kernel's times have a jiffy's resolution (1-4 ms): a send and a receive within one read as equal,
        an exchange answered at once (a request answered on loopback, then an idle connection). A reply is
        no request: inbound, data within REPLY_WINDOW of this end's last send (a pong to our ping); outbound,
        a send within PUSH_REPLY of data the peer pushed unasked (a pong to a server's ping), while a send
        right after an answer (a query after the server's "ready", the next long poll) is one."""
        if self.state != ESTABLISHED:
            return None
        if self.inbound:
            if self.recv_ago is not None and (self.sent_ago is None
                                              or self.sent_ago - self.recv_ago >= REPLY_WINDOW * 1000):
                return self.recv_at
        elif self.sent_ago is not None and (self.recv_ago is None or self.sent_ago < self.recv_ago):
            if self.push_at is not None and 0 <= self.sent_at - self.push_at < PUSH_REPLY:
                return None
            return self.sent_at
        return None

    def before_wait(self):
        """When data last went the other way before this wait began (None: never)."""
        return self.sent_at if self.inbound else self.recv_at

    def active(self, now):
        """Work by bytes, not by waiting: moving, an answer arriving, or a send queue the peer drains."""
        moved = self.moved
        if moved is not None:
            while moved and moved[0][0] <= now - MOVE_WINDOW:
                moved.popleft()
            if not moved:
                self.moved = None
            elif (len(moved) >= MOVE_READS and moved[-1][0] - moved[0][0] >= MOVE_SPAN
                  and sum(b for _, b in moved) / MOVE_WINDOW >= MOVE_RATE):
                return True
        if not self.inbound and self.stream_until is not None and now <= self.stream_until:
            return True
        return self.queued_reads >= 2 and self.acked_at is not None and now - self.acked_at <= QUEUE_STALL


class _Peer(object):
    __slots__ = ("beat_at", "ended", "work_at")

    def __init__(self):
        self.ended = None  # when the last long wait on this key ended (its answer's time where known)
        self.work_at = None  # when work was last seen on this key or by its process
        self.beat_at = None  # when a long wait on this key was last judged a heartbeat (a repeat, no work between)


class Judge(object):
    """Tracks sockets across reads and says which are work. `owner_of(inode)` gives the owning candidate's
    identity (hashable, e.g. (pid, start time)) or None for a socket no candidate owns; it is asked only for
    sockets that may count, so idle connections never cost an owner lookup."""

    def __init__(self):
        self.tracks = {}
        self.peers = collections.OrderedDict()
        self.listening = frozenset()
        self.listen_inodes = frozenset()  # sockets that listen: their owner is a server
        self.owner_work = collections.OrderedDict()  # owner -> when it last did CPU work (note_work)
        # The tracks `busy` must look at again before the next ingest: None, every track (facts changed). A track
        # with no request outstanding and nothing arriving stays so until new facts (its age-driven tests only
        # ever turn false as time passes), so on a box with many idle connections a tick looks at none of them.
        self._live = None

    def ingest(self, now, conns, some=False):
        """A fresh read of every socket (tcp_diag.Conn); the Conns that told it something new (moved, queued,
        new), in order. `some`: a read of a few sockets only, the others known unchanged (an exact lookup of those
        that moved at the last read, when the namespace's segment counters show nothing else did): only these are
        updated, and a socket not among them is not taken for closed."""
        if some:
            listening, tracks = self.listening, self.tracks
        else:
            listening = frozenset(c.lport for c in conns if c.state == LISTEN)
            self.listen_inodes = frozenset(c.inode for c in conns if c.state == LISTEN)
            tracks = {}
        changed = []
        for c in conns:
            if c.state == LISTEN or c.inode == 0:
                continue
            t = self.tracks.get(c.inode)
            if t is None or (t.peer, t.pport, t.lport) != (c.peer, c.pport, c.lport):
                t = Track(c, c.lport in listening)
            elif (c.bytes_in is not None and c.bytes_in == t.bytes_in and c.bytes_out == t.bytes_out
                  and c.state == t.state and not c.notsent and not c.unacked and not t.queued_reads):
                tracks[c.inode] = t  # nothing moved on it since the last read: what it knew still holds
                continue
            t.update(now, c)
            tracks[c.inode] = t
            changed.append(c)
        if not some:
            for ino, t in self.tracks.items():
                if ino not in tracks and t.wait is not None:
                    self._ended(t.wait.key, now)  # closed while waiting: the wait is over
            self.tracks, self.listening = tracks, listening
            self._live = None
        elif self._live is not None:  # the others' facts did not change: only these join what busy looks at
            seen = set(id(t) for t in self._live)
            self._live.extend(t for t in (tracks[c.inode] for c in changed) if id(t) not in seen)
        return changed

    def _peer(self, key):
        p = self.peers.get(key)
        if p is None:
            p = self.peers[key] = _Peer()
            while len(self.peers) > PEERS_MAX:
                self.peers.popitem(last=False)
        else:
            self.peers.move_to_end(key)
        return p

    def _ended(self, key, at):
        self._peer(key).ended = at

    def note_work(self, owners, now):
        """These owners did work (CPU) at `now`: their next long wait on any peer is a first one again."""
        if owners:
            for key, p in self.peers.items():
                if key[0] in owners:
                    p.work_at = now
            for owner in owners:
                self.owner_work[owner] = now
                self.owner_work.move_to_end(owner)
            while len(self.owner_work) > PEERS_MAX:
                self.owner_work.popitem(last=False)

    def _acted_on(self, owner, t, start, owner_of):
        """Whether the server did anything with what came in on `t` at `start`: it worked (a CPU vote since), or
        sent on another of its connections since (a notebook's kernel publishing "busy" for the cell it runs, a
        server handing the request to a worker). A ping it ignores leaves no trace but its arrival. Other sockets'
        owners are looked up only for those that sent since, and only when such a wait begins."""
        if self.owner_work.get(owner, -1.0) >= start:
            return True
        for other in self.tracks.values():
            if (other is not t and other.sent_at is not None and other.sent_at > start
                    and owner_of(other.inode) == owner):
                return True
        return False

    def _end_wait(self, t, now):
        """The wait on `t` is over: answered (or a new request sent). When it counted, the answer that ends
        it is that request's, still arriving: it keeps counting for ANSWER_GAP (so a model's first token
        and its second are one piece of work), without being work between waits itself."""
        w = t.wait
        answer = t.sent_at if t.inbound else t.recv_at
        at = answer if answer is not None and answer > w.start else now
        self._ended(w.key, at)
        if w.counted and not t.inbound and answer is not None and answer > w.start:
            t.tail_until = answer + ANSWER_GAP
        t.wait = None

    def busy(self, now, owner_of, wall_now):
        """[(owner, track)] for the connections that are work now, each track's `since` set (Unix seconds,
        fixed for the busy streak)."""
        out = []
        live = []
        for t in self.tracks.values() if self._live is None else self._live:
            start = t.wait_start()
            if t.wait is not None and (start is None or abs(start - t.wait.start) >= SAME):
                self._end_wait(t, now)
            long_wait = (start is not None and now - start >= WAIT_MIN
                         and (t.inbound or t.pport not in SSH_PORTS))
            active = t.active(now)
            tail = t.tail_until is not None and now <= t.tail_until
            if not (active or tail or long_wait or t.wait is not None):
                t.busy_from = t.since = None
                if start is not None:
                    live.append(t)  # a request outstanding: a long wait when it has lasted WAIT_MIN
                continue
            live.append(t)
            owner = owner_of(t.inode)
            if owner is None:
                t.busy_from = t.since = None
                continue
            key = (owner, t.peer, t.lport if t.inbound else t.pport, t.inbound)
            if active:
                self._peer(key).work_at = now
            if long_wait and t.wait is None:
                p = self.peers.get(key)
                heartbeat = False
                before = t.before_wait()
                if p is not None and p.ended is not None and (p.work_at is None or p.work_at < p.ended):
                    # Back to the same wait with no work since the last one: a heartbeat, unless the key was
                    # silent long before this wait (a person at a prompt, back after a while).
                    last = max(p.ended, before) if before is not None and before <= start else p.ended
                    heartbeat = start - last <= RETURN_GAP
                elif t.inbound and before is not None and before <= start and start - before <= RETURN_GAP:
                    # A client's cadence on a connection this end answered lately (a ping no server answers, a
                    # poll): a request only if the server acted on it.
                    heartbeat = not self._acted_on(owner, t, start, owner_of)
                if heartbeat:
                    self._peer(key).beat_at = start
                t.wait = _Wait(start, key, not heartbeat)
            counted = t.wait is not None and t.wait.counted
            if active or counted or tail:
                if t.busy_from is None:
                    t.busy_from = start if counted else now
                    t.since = round(wall_now - (now - t.busy_from), 1)
                out.append((owner, t))
            else:
                t.busy_from = t.since = None
        self._live = live
        return out
