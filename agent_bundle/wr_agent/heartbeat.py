"""Keep a network-metered box awake: one 1-byte UDP datagram per interval while the published verdict is
BUSY (docs/agent.md, Heartbeat). The default target is the IPv4 default gateway, re-read from
/proc/net/route at each send so a changed route is followed."""

import socket
import struct

RTF_UP, RTF_GATEWAY = 0x1, 0x2
DEFAULT_PORT = 9


def default_gateway(route_path="/proc/net/route"):
    """The gateway of the lowest-metric RTF_UP|RTF_GATEWAY default route, or None."""
    try:
        with open(route_path) as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return None
    best = None
    for line in lines:
        f = line.split()
        if len(f) < 8:
            continue
        try:
            dest, gw, flags, metric, mask = int(f[1], 16), int(f[2], 16), int(f[3], 16), int(f[6]), int(f[7], 16)
        except ValueError:
            continue
        if dest != 0 or mask != 0 or flags & (RTF_UP | RTF_GATEWAY) != (RTF_UP | RTF_GATEWAY) or gw == 0:
            continue
        if best is None or metric < best[0]:
            best = (metric, socket.inet_ntoa(struct.pack("<I", gw)))
    return None if best is None else best[1]


def parse_target(text):
    """'HOST:PORT' -> (host, port); raises ValueError with a plain message."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError("heartbeat target must be HOST:PORT, got %r" % text)
    try:
        port_n = int(port)
    except ValueError:
        raise ValueError("heartbeat target port must be a number, got %r" % port) from None
    if not 0 < port_n < 65536:
        raise ValueError("heartbeat target port out of range: %d" % port_n)
    return host, port_n


class Heartbeat(object):
    def __init__(self, interval=60.0, target=None, enabled=True, route_path="/proc/net/route",
                 tick_seconds=1.0):
        self.interval = float(interval)
        self.fixed_target = target  # (host, port) or None for the default gateway, port 9
        self.enabled = enabled
        self.route_path = route_path
        self.tick_seconds = tick_seconds
        self.last_sent = None
        self.error = None
        self.target = None if target is None else "%s:%d" % target
        self.next_due = None
        self.sent = 0
        self._sock = None

    def tick(self, now, published_busy):
        """Send when due. IDLE (or suppressed) sends nothing and re-arms an immediate first send."""
        if not self.enabled:
            return
        if not published_busy:
            self.next_due = None
            return
        # Half a tick of slack: ticks land a hair before or after the due time, and an interval must not
        # stretch by a whole tick (60 s becoming 61 s).
        if self.next_due is None or now >= self.next_due - self.tick_seconds / 2:
            self._send(now)

    def _resolve(self):
        if self.fixed_target is not None:
            host, port = self.fixed_target
        else:
            host, port = default_gateway(self.route_path), DEFAULT_PORT
            if host is None:
                self.target = None
                return None, "no IPv4 default route in %s" % self.route_path
        self.target = "%s:%d" % (host, port)
        try:
            addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)[0][4]
        except (socket.gaierror, UnicodeError, IndexError) as exc:
            return None, "cannot resolve heartbeat target %s: %s" % (host, exc)
        return addr, None

    def _send(self, now):
        addr, err = self._resolve()
        if addr is not None:
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    self._sock.setblocking(False)
                self._sock.sendto(b"\x00", addr)
            except OSError as exc:
                err = "heartbeat to %s failed: %s" % (self.target, exc.strerror or exc)
                if self._sock is not None:
                    self._sock.close()
                    self._sock = None
        if err is None:
            self.last_sent, self.error, self.sent = now, None, self.sent + 1
            self.next_due = now + self.interval
        else:
            self.error = err
            self.next_due = now + self.tick_seconds * 0.5  # retry on the next tick

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
