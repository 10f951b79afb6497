"""The app's own SSH connections, accounted by connection: their bytes are never the box's network work.

Every connection the app makes to a box — the login, the probe, a push, the relay, a one-shot command's, the
direct link to this socket — moves bytes on the box's link before any of our code runs on the box, so the agent
cannot know at first that a flow is ours. So an SSH flow (a TCP connection to one of the box's SSH ports) waits
`DEFER_SECONDS` before its bytes vote: if the app claims it meanwhile (it subscribes through it), its bytes are
ours from its first to its last and never count; if nobody claims it, what it moved while it waited counts then,
late (a person's ssh is work, a few seconds after it begins).

A claim names the flow exactly where it can: our relay's process carries the connection's `SSH_CONNECTION`
("client-ip client-port server-ip server-port", as this box's sshd saw it, proxies included). A stream straight
to the socket (OpenSSH's streamlocal forwarding) has sshd's own process at the other end, which this user may not
read: it claims the newest unclaimed SSH flow opened within `RECENT_SECONDS` — the app opens that stream right
after its login, and a person's ssh begun in the same seconds is the limit of this rule (docs/agent.md).

The byte counts come from each socket's `tcp_info` (payload bytes acked and received), scaled for headers as the
server's estimate of its relay traffic is. Read only on ticks when bytes moved on the box's link (or a flow
waits), so an idle box reads nothing. Claims arrive on the server thread; the tick thread does the rest.

A person's SSH flow that forwards ports (`ssh -L` to an editor's server, a notebook, a dev server; `-R`) carries
bytes whose work is judged where they end up: on the forwarded connection, a TCP connection within the box whose
one end the session's sshd process holds (the connection rule judges it: a page downloading is work, an open
tab's chatter is a listener's). So a person's flows' bytes that match what the forwarded connections moved, with
the SSH framing around them (`FRAMING`), are held: they never vote `net` a second time, as a box-wide count that
outweighs the connection they came from.

A forwarded connection's end is known by who holds it. OpenSSH's session process runs as the person but is not
dumpable, so its descriptors are root's to read: the end is a loopback socket of this user that no process of
this user whose descriptors can be read holds (or an `sshd` process does, where they can be read). The holders
are found by one walk of /proc when a new loopback end of this user's moves while a person's flow moves bytes
(at most one walk every `WALK_EVERY` seconds); an end stays what it was found to be for its life. The limit: a
non-dumpable process of this user's other than sshd talking over loopback TCP in the same seconds as a
person's flow is taken for a forward (docs/agent.md).
"""

import os
import threading
import time

DEFER_SECONDS = 5.0
RECENT_SECONDS = 3.0
SSH_PORT = 22
# Headers and ACKs around a flow's payload (tcp_info counts payload only): the relay's estimate uses the same.
WIRE_FACTOR = 1.1
PACKET_BYTES = 66
PAYLOAD_PER_PACKET = 1400
# The SSH packet around forwarded bytes (length, padding, channel header, MAC): held with them.
FRAMING = 1.25
WALK_EVERY = 5.0  # seconds between walks of /proc for the holders of new loopback ends


def parse_ssh_connection(text):
    """(client, client port, server, server port) from an `SSH_CONNECTION` value, or None."""
    parts = (text or "").split()
    if len(parts) != 4:
        return None
    try:
        cport, sport = int(parts[1]), int(parts[3])
    except ValueError:
        return None
    if not (0 < cport < 65536 and 0 < sport < 65536):
        return None
    return _plain_v4(parts[0]), cport, _plain_v4(parts[2]), sport


def _plain_v4(address):
    return address[7:] if address.startswith("::ffff:") and "." in address else address


def ssh_connection_of(pid, proc="/proc"):
    """The `SSH_CONNECTION` a process of this user was started with (None: not readable, or none)."""
    try:
        with open("%s/%d/environ" % (proc, pid), "rb") as f:
            env = f.read(1 << 20)
    except (OSError, ValueError, TypeError):
        return None
    for item in env.split(b"\0"):
        if item.startswith(b"SSH_CONNECTION="):
            return parse_ssh_connection(item[15:].decode("ascii", "replace"))
    return None


def _loopback(address):
    return address.startswith("127.") or address in ("::1", "localhost")


def _socket_inodes(proc, pid):
    """The socket inodes process `pid` holds (an empty set: none, or its descriptors may not be read), or None
    when it is gone."""
    fd_dir = "%s/%s/fd" % (proc, pid)
    try:
        fds = os.listdir(fd_dir)
    except FileNotFoundError:
        return None
    except OSError:
        return set()
    found = set()
    for fd in fds[:256]:
        try:
            target = os.readlink(fd_dir + "/" + fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            try:
                found.add(int(target[8:-1]))
            except ValueError:
                pass
    return found


def wire_bytes(payload):
    """A flow's payload bytes as they cross the link, headers and ACKs included (an estimate)."""
    return int(payload * WIRE_FACTOR) + (payload // PAYLOAD_PER_PACKET + 1) * PACKET_BYTES if payload else 0


class _Flow(object):
    __slots__ = ("claimed", "first_seen", "payload", "released", "waiting")

    def __init__(self, now, payload):
        self.first_seen, self.payload = now, payload
        self.claimed, self.released = False, False
        self.waiting = 0  # wire bytes moved while it waited for a claim


class OwnFlows(object):
    """One agent's account of SSH flows: `claim`/`claim_recent` from the server, `account` on each tick."""

    def __init__(self, reader, clock=time.monotonic, proc="/proc", uid=None):
        self.reader = reader
        self.clock = clock
        self.proc = proc
        self.uid = os.getuid() if uid is None else uid
        self.ends = {}  # inode -> [a forward's end: True/False/None (not known yet), payload bytes at the last read]
        self._walked = None  # when /proc was last walked for the holders of loopback ends
        self.ssh_ports = {SSH_PORT}
        self.flows = {}  # (client, client port, server, server port) -> _Flow
        self._lock = threading.Lock()
        self._claims = []  # (key, when) exact claims not yet matched to a flow
        self._recent_claims = 0
        self.error = None

    # -- the server thread -----------------------------------------------------------------------------
    def claim(self, key):
        """The app subscribed through the flow `key` (from SSH_CONNECTION): ours, from its first byte."""
        with self._lock:
            self._claims.append((key, self.clock()))
            self.ssh_ports.add(key[3])

    def claim_recent(self):
        """The app subscribed straight to the socket over SSH: the newest unclaimed flow of the last seconds."""
        with self._lock:
            self._recent_claims += 1

    # -- the tick thread --------------------------------------------------------------------------------
    @property
    def waiting(self):
        """Whether a flow waits for a claim (so the next tick reads the flows even if the link was quiet)."""
        return any(not f.claimed and not f.released for f in self.flows.values())

    def account(self, moved):
        """(bytes of `moved` that were ours or are held back, bytes released to count now) for this tick."""
        if not moved and not self.waiting and not self._claims and not self._recent_claims:
            return 0, 0
        try:
            conns = self.reader.read()
            self.error = None
        except (OSError, ValueError) as exc:
            self.error = str(exc)
            return 0, 0
        now = self.clock()
        seen = {}
        local = {}  # inode -> payload bytes, of this user's loopback ends (where a forward ends)
        for c in conns:
            if c.state == 10 or c.bytes_in is None or c.bytes_out is None:
                continue  # a listener, or no counters (no tcp_info)
            if _loopback(_plain_v4(c.local)):
                if c.uid == self.uid:
                    local[c.inode] = c.bytes_in + c.bytes_out
                continue  # never on the box's link: the link's counters never saw it
            if c.lport in self.ssh_ports:
                seen[(_plain_v4(c.peer), c.pport, _plain_v4(c.local), c.lport)] = c.bytes_in + c.bytes_out
        held, released = 0, 0
        moving = []  # (flow, wire bytes this tick) of a person's flows (not claimed)
        for key, payload in seen.items():
            flow = self.flows.get(key)
            if flow is None:
                flow = self.flows[key] = _Flow(now, 0)
            delta = wire_bytes(max(0, payload - flow.payload))
            flow.payload = payload
            if flow.claimed or not flow.released:
                held += delta
            if delta and not flow.claimed:
                moving.append((flow, delta))
        # what the forwards moved is judged on their own connections, never a second time as `net`
        pool = int(self._forwarded(local, now, bool(moving)) * FRAMING)
        for flow, delta in moving:
            forwarded = min(delta, pool)
            pool -= forwarded
            if flow.released:
                held += forwarded
            else:
                flow.waiting += delta - forwarded
        self._match_claims(now)
        for key, flow in list(self.flows.items()):
            gone = key not in seen
            if not flow.claimed and not flow.released and (gone or now - flow.first_seen >= DEFER_SECONDS):
                flow.released = True  # nobody claimed it: a person's ssh; what it moved counts now
                released += flow.waiting
            if gone:
                del self.flows[key]
        return min(held, moved), released

    def _forwarded(self, local, now, wanted):
        """Wire bytes the forwarded connections' ends moved since the last read (counted only if `wanted`: a
        person's flow moved bytes this tick; the ends' counters are kept up to date either way)."""
        unknown = [ino for ino, payload in local.items()
                   if wanted and payload and (ino not in self.ends or self.ends[ino][0] is None)]
        if unknown and (self._walked is None or now - self._walked >= WALK_EVERY):
            self._walked = now
            self._find_holders(unknown)
        moved = 0
        for ino, payload in local.items():
            end = self.ends.setdefault(ino, [None, 0])
            if end[0]:
                moved += max(0, payload - end[1])
            end[1] = payload
        for ino in [i for i in self.ends if i not in local]:
            del self.ends[ino]
        return wire_bytes(moved) if wanted else 0

    def _find_holders(self, inodes):
        """Mark each end as a forward's or not: held by an sshd process, or by no process whose descriptors this
        user may read (OpenSSH's session process is not dumpable), is a forward's."""
        readable, by_sshd = set(), set()
        try:
            pids = [p for p in os.listdir(self.proc) if p.isdigit()]
        except OSError:
            return
        for pid in pids:
            held = _socket_inodes(self.proc, pid)
            if not held:
                continue
            readable |= held
            try:
                with open("%s/%s/comm" % (self.proc, pid), "rb") as f:
                    if f.read(64).startswith(b"sshd"):
                        by_sshd |= held
            except OSError:
                continue
        for ino in inodes:
            self.ends.setdefault(ino, [None, 0])[0] = ino in by_sshd or ino not in readable

    def _match_claims(self, now):
        with self._lock:
            claims, self._claims = self._claims, []
            recent, self._recent_claims = self._recent_claims, 0
        for key, when in claims:
            flow = self.flows.get(key)
            if flow is not None:
                flow.claimed = True
            elif now - when < 2 * DEFER_SECONDS:
                with self._lock:
                    self._claims.append((key, when))  # its flow is not read yet: the next read finds it
        for _ in range(recent):
            fresh = [f for f in self.flows.values() if not f.claimed and not f.released
                     and now - f.first_seen <= RECENT_SECONDS]
            if fresh:
                max(fresh, key=lambda f: f.first_seen).claimed = True
