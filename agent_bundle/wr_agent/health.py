"""The health endpoint (`serve --health-listen HOST:PORT`): `GET /v1/health`, unauthenticated, telling an
outside caller only whether the box is busy.

Request-metered platforms count only inbound requests through their proxy as activity (docs/providers.md), so
while the app runs it polls this endpoint from outside to keep a BUSY box awake. Anyone who can reach
the port may ask, so the answer is exactly `{"busy", "verdict", "stalled"}`: no name, reasons, pids or
version.

Plain sockets on one selectors thread instead of `http.server`, whose imports (email, ...) would add
about 5.5 MB to an agent whose RSS goal is 20 MB. Every client is bounded: a head of at most 8 KiB, a
deadline from accept (slowloris), at most MAX_CLIENTS at once (the oldest is dropped to make room), one
answer then close. The answer reads the agent's published state without its lock (two attribute reads,
each atomic), so neither side ever waits for the other and no client can touch the tick or the Unix
socket's clients.
"""

import json
import os
import re
import selectors
import socket
import threading
import time

from wr_agent import runtime
from wr_agent.agent import STALL_SECONDS
from wr_agent.agent_log import log
from wr_agent.select_loop import SelectLoop

HEALTH_PATH = "/v1/health"
MAX_HEAD = 8192  # request line + headers + the blank line
MAX_CLIENTS = 32
CLIENT_DEADLINE = 5.0  # accept -> complete head; a slower client is cut
LINGER_SECONDS = 1.0  # after the answer: read and discard what the client still sends, so close() is no RST
LINGER_BYTES = 1 << 20
LISTEN_FD_ENV = "WR_AGENT_HEALTH_FD"  # the listening socket passed across a hand-off
# One poll on the wire beyond our answer: the handshake, the request head, ACKs and FINs, about 10 packets
# of ~66 bytes (measured: a poll moved ~880 bytes over a veth). Credited, once per answer the endpoint
# sends, as this many protocol "messages" to the agent's own-traffic discount (Agent.count_own_traffic:
# 250 bytes each). Only what the endpoint sends is credited: what a client sends (a 1 MiB body, a flood) is
# never taken off the network signal, and nothing at all on a path the signal does not count (loopback).
CONNECTION_MESSAGES = 4
ADDRESS_CACHE_SECONDS = 5.0

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_VERSION = re.compile(rb"^HTTP/([0-9])\.([0-9])$")
_TARGET = re.compile(rb"^[\x21-\x7e]+$")
_FIELD_VALUE_BAD = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_PORT = re.compile(r"^[0-9]{1,5}$")
_ABSOLUTE = re.compile(rb"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            431: "Request Header Fields Too Large", 500: "Internal Server Error",
            505: "HTTP Version Not Supported"}


class HealthListenError(ValueError):
    """A --health-listen value or bind the agent refuses, said plainly."""


# -- address ---------------------------------------------------------------------------------------------
def parse_listen(text):
    """'A.B.C.D:PORT' or '[IPv6]:PORT' (port 0 = any free port) -> (family, host, port).

    Literal addresses only: a name would need DNS at start and could resolve to more than one address.
    """
    if not isinstance(text, str) or not text:
        raise HealthListenError("--health-listen must be HOST:PORT")
    if text.startswith("["):
        host, sep, port = text[1:].partition("]:")
        family = socket.AF_INET6
        if not sep:
            raise HealthListenError("--health-listen: an IPv6 address is written [ADDR]:PORT, got %r" % text)
    else:
        host, sep, port = text.rpartition(":")
        family = socket.AF_INET
        if not sep or not host:
            raise HealthListenError("--health-listen must be HOST:PORT (IPv4) or [ADDR]:PORT (IPv6), got %r"
                                    % text)
    try:
        socket.inet_pton(family, host)
    except (OSError, ValueError):
        raise HealthListenError("--health-listen: %r is not an IPv%d address literal"
                                % (host, 6 if family == socket.AF_INET6 else 4)) from None
    if not _PORT.match(port) or not 0 <= int(port) <= 65535:
        raise HealthListenError("--health-listen: port must be 0-65535, got %r" % port)
    return family, host, int(port)


def format_address(sock):
    """'host:port' or '[host]:port' of a bound socket (the port the kernel chose for port 0)."""
    addr = sock.getsockname()
    if sock.family == socket.AF_INET6:
        return "[%s]:%d" % (addr[0], addr[1])
    return "%s:%d" % (addr[0], addr[1])


def _inherited(family, host, port):
    """The listening socket a hand-off passed in LISTEN_FD_ENV, if it matches the requested address."""
    fd = runtime.inherited_fd(LISTEN_FD_ENV)
    if fd is None:
        return None
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        os.close(fd)
        return None
    try:
        bound = sock.getsockname()
        ok = (sock.family == family and sock.type == socket.SOCK_STREAM
              and socket.inet_pton(family, bound[0]) == socket.inet_pton(family, host)
              and (port == 0 or bound[1] == port))
    except (OSError, ValueError):
        ok = False
    if not ok:
        sock.close()
        return None
    return sock


def open_listener(spec, backlog=64):
    """Bind and listen on `spec` (a parse_listen tuple); reuse the hand-off's socket when it matches.

    Raises HealthListenError naming the address and the reason (in use, not on this host, ...).
    """
    family, host, port = spec
    sock = _inherited(family, host, port)
    if sock is not None:
        return sock
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # REUSEADDR: a restart after a crash may rebind past TIME_WAIT; a live listener still refuses.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        where = "[%s]:%d" % (host, port) if family == socket.AF_INET6 else "%s:%d" % (host, port)
        raise HealthListenError("cannot listen for health requests on %s: %s"
                                % (where, exc.strerror or exc)) from None
    return sock


def keep_for_handoff(sock):
    """Make the listener survive the hand-off's exec (undo with release_after_failed_handoff)."""
    os.set_inheritable(sock.fileno(), True)
    os.environ[LISTEN_FD_ENV] = str(sock.fileno())


def release_after_failed_handoff(sock):
    os.environ.pop(LISTEN_FD_ENV, None)
    try:
        os.set_inheritable(sock.fileno(), False)
    except OSError:
        pass


def drop_inherited():
    """Close a listener a hand-off passed in although this serve has no --health-listen."""
    value = os.environ.pop(LISTEN_FD_ENV, None)
    if value is not None and value.isdigit():
        try:
            os.close(int(value))
        except OSError:
            pass


# -- the answer --------------------------------------------------------------------------------------------
def agent_answer(agent):
    """The three public fields from the agent's published state.

    Lock-free on purpose: `published_busy` and `last_tick` are each replaced whole by the tick (a single
    reference store), so reading them cannot block the tick nor be blocked by it; `stalled` uses the
    same rule as the status object.
    """
    busy = bool(agent.published_busy)
    last = agent.last_tick
    if last is None:
        last = agent.started
    stalled = agent.clock() - last >= STALL_SECONDS
    return {"busy": busy, "verdict": "BUSY" if busy else "IDLE", "stalled": bool(stalled)}


def _response(code, body, content_type, head_only, extra=()):
    lines = ["HTTP/1.1 %d %s" % (code, _REASONS[code]),
             "Content-Type: %s" % content_type,
             "Content-Length: %d" % len(body),
             "Cache-Control: no-store",
             "Connection: close"]
    lines.extend(extra)
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    return head if head_only else head + body


def _error(code, head_only=False, extra=()):
    body = ("%s\n" % _REASONS[code]).encode("ascii")
    return _response(code, body, "text/plain; charset=utf-8", head_only, extra)


def respond(head, answer):
    """The full response (bytes) to one complete request head (without its blank line).

    `answer` is called only for a valid GET/HEAD of HEALTH_PATH. Unknown paths are 404 whatever the
    method; the health path with another method is 405 with Allow; anything malformed is 400.
    """
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in head.split(b"\n")]
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not all(parts):
        return _error(400)
    method, target, version = parts
    v = _VERSION.match(version)
    if not _TOKEN.match(method) or not _TARGET.match(target) or v is None:
        return _error(400)
    if v.group(1) != b"1":
        return _error(505)
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.match(name) or _FIELD_VALUE_BAD.search(value):
            return _error(400)  # also obs-fold (a line starting with space): not a token before ':'
    head_only = method == b"HEAD"
    if target.startswith(b"/"):
        path = target
    else:
        m = _ABSOLUTE.match(target)
        if m is None:
            return _error(400)
        path = target[m.end():] or b"/"
    path = path.split(b"?", 1)[0]
    if path != HEALTH_PATH.encode("ascii"):
        return _error(404, head_only)
    if method not in (b"GET", b"HEAD"):
        return _error(405, extra=("Allow: GET, HEAD",))
    try:
        ans = answer()
        body = json.dumps({"busy": bool(ans["busy"]), "verdict": ans["verdict"],
                           "stalled": bool(ans["stalled"])}, separators=(",", ":")).encode("ascii")
    except Exception:  # a bug must cost one answer, never the thread
        log.exception("health answer failed")
        return _error(500, head_only)
    return _response(200, body, "application/json", head_only)


def head_status(buf):
    """(head, None) once `buf` holds a complete head, (None, response) for one that is too large,
    (None, None) while more is needed. Leading empty lines are skipped (RFC 9112 §2.2)."""
    m = _HEAD_END.search(buf, 0, MAX_HEAD + 4)
    if m is not None:
        if m.end() > MAX_HEAD:
            return None, _error(431)
        return bytes(buf[:m.start()]), None
    if len(buf) >= MAX_HEAD:
        return None, _error(431)
    return None, None


# -- the server thread ------------------------------------------------------------------------------------
_READING, _WRITING, _LINGERING = 0, 1, 2


_addresses = [0.0, None]  # (read at, {local address: interface} or None when it cannot be told)


def local_addresses(clock=time.monotonic):
    """{address: interface} of this network namespace's own addresses (Linux: the IPv4 address of each
    interface and /proc/net/if_inet6), or None where it cannot be told. Cached for a few seconds."""
    now = clock()
    if _addresses[1] is not None and now - _addresses[0] < ADDRESS_CACHE_SECONDS:
        return _addresses[1]
    try:
        names = os.listdir("/sys/class/net")
    except OSError:
        return None
    import fcntl
    import struct
    found = {}
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for name in names:
            try:
                raw = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
                found[socket.inet_ntoa(raw[20:24])] = name
            except OSError:
                continue
    finally:
        probe.close()
    try:
        with open("/proc/net/if_inet6") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and len(parts[0]) == 32:
                    packed = bytes.fromhex(parts[0])
                    found[socket.inet_ntop(socket.AF_INET6, packed)] = parts[5]
    except (OSError, ValueError):
        pass
    _addresses[:] = [now, found]
    return found


def _plain_ip(address):
    ip = address[0] if isinstance(address, tuple) else str(address)
    ip = ip.split("%", 1)[0]
    return ip[7:] if ip.startswith("::ffff:") and "." in ip else ip


def crosses_counted_link(sock):
    """Whether this connection's bytes move on an interface the network signal counts: not when the peer
    is this machine (loopback, or one of its own addresses, which the kernel carries over lo), nor when our
    end is an interface the signal leaves out. Unknown (no /proc, an address we cannot place): counted."""
    try:
        ours, peer = _plain_ip(sock.getsockname()), _plain_ip(sock.getpeername())
    except OSError:
        return False
    if peer.startswith("127.") or peer == "::1":
        return False
    addresses = local_addresses()
    if addresses is None:
        return True
    if peer in addresses:
        return False
    name = addresses.get(ours)
    if name is None:
        return True
    from wr_agent.host_signals import default_route_interfaces, interface_counts
    return interface_counts(name, default_routes=default_route_interfaces())


class _Client(object):
    __slots__ = ("answered", "buf", "counted", "deadline", "drained", "out", "sock", "state")

    def __init__(self, sock, deadline, counted=False):
        self.sock = sock
        self.counted = counted
        self.answered = False
        self.buf = bytearray()
        self.out = b""
        self.deadline = deadline
        self.state = _READING
        self.drained = 0


class HealthServer(SelectLoop):
    """Serves the health endpoint on `listen_sock` from its own thread; `answer()` gives the three fields.

    `on_traffic(payload_bytes, messages)`, called as bytes move (and at accept for the handshake and
    teardown packets), lets the agent discount the endpoint's own bytes from the network signal: polls
    cross the box's link, and if they counted as work a poller that runs while the box is BUSY would
    keep it BUSY forever.
    """

    def __init__(self, listen_sock, answer, max_clients=MAX_CLIENTS, deadline=CLIENT_DEADLINE,
                 clock=time.monotonic, on_traffic=None, link_counts=crosses_counted_link):
        SelectLoop.__init__(self, listen_sock, clock, "health endpoint")
        self.answer = answer
        self.on_traffic = on_traffic
        self.link_counts = link_counts
        self.max_clients = max_clients
        self.deadline = deadline
        self.address = format_address(listen_sock)
        self._stop = threading.Event()
        self._thread = None
        self.errors = 0

    def start(self):
        self._thread = threading.Thread(target=self._run, name="wr-agent-health", daemon=True)
        self._thread.start()

    def stop(self, timeout=2.0):
        """Stop the thread and close the clients; the listening socket stays open (its owner closes it)."""
        self._stop.set()
        self.wake()
        if self._thread is not None:
            self._thread.join(timeout)
        self.close()

    def _run(self):
        while not self._stop.is_set():
            try:
                self._once()
            except Exception:  # a bug must not end the endpoint; count, log once, go on
                self.errors += 1
                if self.errors == 1:
                    log.exception("health endpoint: unexpected error (carrying on)")
                time.sleep(0.05)

    def _once(self):
        # Nothing pending: sleep until a connection or stop() (no idle wake-ups to cost the agent CPU).
        wake_at = [c.deadline for c in self.clients]
        self.select_once(max(0.0, min(wake_at) - self.clock()) if wake_at else None)
        now = self.clock()
        for c in [c for c in self.clients if c.deadline <= now]:
            self._drop(c)  # too slow to send a head, or lingering over: cut without an answer

    def _accept(self):
        for sock in self._gate.accept():
            if len(self.clients) >= self.max_clients:
                self._drop(next(iter(self.clients)))  # the oldest: most likely a slow client
            counted = False
            if self.on_traffic is not None:
                try:
                    counted = bool(self.link_counts(sock))
                except Exception:  # never costs the answer; an unknown path earns no credit
                    counted = False
            self._add(_Client(sock, self.clock() + self.deadline, counted))

    def _count(self, c, payload_bytes, messages=0):
        if self.on_traffic is None or not c.counted:
            return
        try:
            self.on_traffic(payload_bytes, messages)
        except Exception:  # accounting must never cost an answer
            self.errors += 1
            if self.errors == 1:
                log.exception("health endpoint: counting own traffic failed (carrying on)")

    def _service(self, c, mask):
        if c not in self.clients:
            return
        if mask & selectors.EVENT_WRITE:
            self._flush(c)
            return
        try:
            data = c.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            if c.state == _READING and c.buf:
                self._answer(c, _error(400))  # hung up mid-head (write may still reach a half-close)
            else:
                self._drop(c)
            return
        if c.state == _LINGERING:
            c.drained += len(data)
            if c.drained > LINGER_BYTES:
                self._drop(c)
            return
        if c.state != _READING:
            return  # a body or pipelined bytes while we write: ignored
        c.buf += data
        if c.buf[:1] in (b"\r", b"\n"):
            del c.buf[:len(c.buf) - len(c.buf.lstrip(b"\r\n"))]
        head, refusal = head_status(c.buf)
        if refusal is not None:
            self._answer(c, refusal)
        elif head is not None:
            self._answer(c, respond(head, self.answer))

    def _answer(self, c, response):
        if not c.answered:
            c.answered = True
            self._count(c, 0, CONNECTION_MESSAGES)
        c.buf = bytearray()
        c.out = response
        c.state = _WRITING
        c.deadline = self.clock() + LINGER_SECONDS
        self._flush(c)

    def _flush(self, c):
        try:
            while c.out:
                n = c.sock.send(c.out)
                c.out = c.out[n:]
                self._count(c, n)
        except (BlockingIOError, InterruptedError):
            self.sel.modify(c.sock, selectors.EVENT_WRITE, c)
            return
        except OSError:
            self._drop(c)
            return
        # Answered: half-close and read what is left (a body) until EOF, so the close sends FIN, not an
        # RST that could destroy the answer in the client's buffer.
        c.state = _LINGERING
        try:
            c.sock.shutdown(socket.SHUT_WR)
            self.sel.modify(c.sock, selectors.EVENT_READ, c)
        except OSError:
            self._drop(c)
