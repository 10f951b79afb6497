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
"""

import threading
import time

DEFER_SECONDS = 5.0
RECENT_SECONDS = 3.0
SSH_PORT = 22
# Headers and ACKs around a flow's payload (tcp_info counts payload only): the relay's estimate uses the same.
WIRE_FACTOR = 1.1
PACKET_BYTES = 66
PAYLOAD_PER_PACKET = 1400


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

    def __init__(self, reader, clock=time.monotonic):
        self.reader = reader
        self.clock = clock
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
        for c in conns:
            if c.state == 10 or c.lport not in self.ssh_ports or c.bytes_in is None or c.bytes_out is None:
                continue  # a listener, another service, or no counters (no tcp_info)
            if _loopback(c.local):
                continue  # never on the box's link: the link's counters never saw it
            seen[(_plain_v4(c.peer), c.pport, _plain_v4(c.local), c.lport)] = c.bytes_in + c.bytes_out
        held, released = 0, 0
        for key, payload in seen.items():
            flow = self.flows.get(key)
            if flow is None:
                flow = self.flows[key] = _Flow(now, 0)
            delta = wire_bytes(max(0, payload - flow.payload))
            flow.payload = payload
            if flow.claimed:
                held += delta
            elif not flow.released:
                held += delta
                flow.waiting += delta
        self._match_claims(now)
        for key, flow in list(self.flows.items()):
            gone = key not in seen
            if not flow.claimed and not flow.released and (gone or now - flow.first_seen >= DEFER_SECONDS):
                flow.released = True  # nobody claimed it: a person's ssh; what it moved counts now
                released += flow.waiting
            if gone:
                del self.flows[key]
        return min(held, moved), released

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
