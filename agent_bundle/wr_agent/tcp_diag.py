"""Per-connection TCP facts from the kernel: sock_diag netlink (`tcp_info`), or `/proc/net/tcp{,6}` where
netlink is not there (gVisor, some containers, old kernels).

Linux's NETLINK_SOCK_DIAG answers an `inet_diag_req_v2` dump with one `inet_diag_msg` per socket of the
network namespace, and with INET_DIAG_INFO its `struct tcp_info`: how long ago data was last sent and
received, bytes acked and received, unsent bytes. Any user may ask; the standard library's AF_NETLINK is
enough. Layouts are the kernel's uapi headers (linux/sock_diag.h, linux/inet_diag.h, linux/tcp.h); the
structs are host-endian except the addresses and ports, which are network order. A `tcp_info` shorter than
today's (an older kernel) leaves the fields it lacks as None.

The fallback has queues and timers only: no times, no byte counters (docs/agent.md, "Connections").
"""

import errno
import os
import socket
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_INFO = 2  # the rtattr type of the tcp_info; requested as bit (INET_DIAG_INFO - 1) of idiag_ext

ESTABLISHED, CLOSE_WAIT, LISTEN = 1, 8, 10
STATES = (1 << ESTABLISHED) | (1 << CLOSE_WAIT) | (1 << LISTEN)

_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
# inet_diag_req_v2: family, protocol, ext, pad, states, then inet_diag_sockid (48 bytes, zero: every socket)
_REQ = struct.Struct("=BBBxI48x")
# inet_diag_msg: family, state, timer, retrans; sockid (sport, dport, src[16], dst[16], if, cookie[2]);
# expires, rqueue, wqueue, uid, inode
_MSG = struct.Struct("=BBBB2s2s16s16sI8sIIIII")
_RTA = struct.Struct("=HH")
# struct tcp_info offsets (linux/tcp.h): the fields the rule reads.
_TI_U32 = {"unacked": 24, "last_data_sent": 44, "last_data_recv": 52, "total_retrans": 100, "segs_out": 136,
           "segs_in": 140,
           "notsent_bytes": 144, "data_segs_in": 152, "data_segs_out": 156}
_TI_U64 = {"bytes_acked": 120, "bytes_received": 128}
MAX_SOCKETS = 65536  # a dump is cut here (a box with more connections is judged on the first ones)


class Conn(object):
    """One TCP socket's facts at one read. Times are milliseconds ago (None: no data ever that way, or not
    known); byte counters are cumulative over the connection (None: not known)."""

    __slots__ = ("bytes_in", "bytes_out", "family", "inode", "local", "lport", "notsent", "peer", "pport",
                 "recv_ago", "retrans", "rqueue", "segs_in", "segs_out", "sent_ago", "sockid", "state", "timer",
                 "uid", "unacked", "wqueue")

    def __init__(self, family, state, local, lport, peer, pport, inode, uid=0, rqueue=0, wqueue=0, timer=0,
                 sent_ago=None, recv_ago=None, bytes_out=None, bytes_in=None, notsent=None, unacked=None,
                 sockid=None):
        self.family, self.state = family, state
        self.local, self.lport, self.peer, self.pport = local, lport, peer, pport
        self.inode, self.uid = inode, uid
        self.rqueue, self.wqueue, self.timer = rqueue, wqueue, timer
        self.sent_ago, self.recv_ago = sent_ago, recv_ago
        self.bytes_out, self.bytes_in = bytes_out, bytes_in
        self.notsent, self.unacked = notsent, unacked
        # Segments in and out, pure acknowledgements and retransmissions included, and how many were retransmitted
        # (None: not known); the kernel's id of the socket (sock_diag only: for an exact lookup).
        self.segs_in = self.segs_out = self.retrans = None
        self.sockid = sockid

    def __repr__(self):
        return "Conn(%s:%d -> %s:%d st=%d ino=%d sent=%s recv=%s out=%s in=%s wq=%d notsent=%s)" % (
            self.local, self.lport, self.peer, self.pport, self.state, self.inode, self.sent_ago, self.recv_ago,
            self.bytes_out, self.bytes_in, self.wqueue, self.notsent)


def request(family, seq, sockid=None):
    """One dump request: every TCP socket of `family` in ESTABLISHED, CLOSE_WAIT or LISTEN, with tcp_info. With
    `sockid` (the 48 bytes of a socket's inet_diag_sockid, as a dump gave them): that one socket only, looked up
    by its addresses, ports and cookie (a socket closed since, or a new one on the same ports, is not found)."""
    body = _REQ.pack(family, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), STATES)
    flags = NLM_F_REQUEST | NLM_F_DUMP
    if sockid is not None:
        body, flags = body[:-len(sockid)] + sockid, NLM_F_REQUEST
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, flags, seq, 0) + body


def _address(family, raw):
    if family == socket.AF_INET:
        return socket.inet_ntop(socket.AF_INET, raw[:4])
    text = socket.inet_ntop(socket.AF_INET6, raw)
    if text.startswith("::ffff:") and "." in text:
        return text[7:]  # an IPv4 peer on a dual-stack socket
    return text


# The same fields in one unpack, for a tcp_info that has them all (Linux 4.6+): a dump of hundreds of sockets
# every tick is parsed at a fraction of the cost of one call per field.
_TI_FAST = struct.Struct("=24xI16xI4xI44xI16xQQIII4xII")


def _tcp_info(buf, start, length, conn):
    """Fill `conn` from a tcp_info of `length` bytes at `start` (fields past its end stay None)."""
    if length >= _TI_FAST.size:
        (conn.unacked, sent, recv, conn.retrans, conn.bytes_out, conn.bytes_in, conn.segs_out, conn.segs_in,
         conn.notsent, segs_in, segs_out) = _TI_FAST.unpack_from(buf, start)
        conn.sent_ago = None if segs_out == 0 else sent
        conn.recv_ago = None if segs_in == 0 else recv
        return
    end = start + length

    def u32(off):
        return struct.unpack_from("=I", buf, start + off)[0] if start + off + 4 <= end else None

    def u64(off):
        return struct.unpack_from("=Q", buf, start + off)[0] if start + off + 8 <= end else None

    segs_out, segs_in = u32(_TI_U32["data_segs_out"]), u32(_TI_U32["data_segs_in"])
    sent, recv = u32(_TI_U32["last_data_sent"]), u32(_TI_U32["last_data_recv"])
    # The kernel reports the time since the connection began for a direction that never carried data; the
    # data segment counts (Linux 4.6+) tell the two apart. Without them the times are taken as they come.
    conn.sent_ago = None if segs_out == 0 else sent
    conn.recv_ago = None if segs_in == 0 else recv
    conn.unacked = u32(_TI_U32["unacked"])
    conn.notsent = u32(_TI_U32["notsent_bytes"])
    conn.bytes_out, conn.bytes_in = u64(_TI_U64["bytes_acked"]), u64(_TI_U64["bytes_received"])
    conn.segs_out, conn.segs_in = u32(_TI_U32["segs_out"]), u32(_TI_U32["segs_in"])
    conn.retrans = u32(_TI_U32["total_retrans"])


def parse(buf, seq=None):
    """(connections, done) from one netlink read. `done`: the dump's NLMSG_DONE was in it. Raises OSError
    for an NLMSG_ERROR (the kernel refused the request) and ValueError for a malformed message."""
    conns = []
    off, n = 0, len(buf)
    while off + _NLMSGHDR.size <= n:
        length, kind, _flags, mseq, _pid = _NLMSGHDR.unpack_from(buf, off)
        if length < _NLMSGHDR.size or off + length > n:
            raise ValueError("truncated netlink message")
        body = off + _NLMSGHDR.size
        nxt = off + ((length + 3) & ~3)
        if seq is not None and mseq != seq:
            off = nxt
            continue  # an answer to an earlier request that timed out
        if kind == NLMSG_DONE:
            return conns, True
        if kind == NLMSG_ERROR:
            code = struct.unpack_from("=i", buf, body)[0] if body + 4 <= off + length else -errno.EIO
            if code == 0:
                off = nxt
                continue  # an acknowledgement
            raise OSError(-code, os.strerror(-code))
        if kind == SOCK_DIAG_BY_FAMILY:
            if body + _MSG.size > off + length:
                raise ValueError("short inet_diag_msg")
            (family, state, timer, _retrans, sport, dport, src, dst, _if, _cookie, _expires, rqueue, wqueue,
             uid, inode) = _MSG.unpack_from(buf, body)
            c = Conn(family, state, _address(family, src), struct.unpack("!H", sport)[0],
                     _address(family, dst), struct.unpack("!H", dport)[0], inode, uid, rqueue, wqueue, timer,
                     sockid=buf[body + 4:body + 52])
            a = body + _MSG.size
            end = off + length
            while a + _RTA.size <= end:
                rlen, rtype = _RTA.unpack_from(buf, a)
                if rlen < _RTA.size or a + rlen > end:
                    break
                if rtype == INET_DIAG_INFO:
                    _tcp_info(buf, a + _RTA.size, rlen - _RTA.size, c)
                a += (rlen + 3) & ~3
            conns.append(c)
        off = nxt
    return conns, False


def open_socket(timeout):
    """A NETLINK_SOCK_DIAG socket, bound, with a receive timeout (the kernel answers at once or not at all)."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | getattr(socket, "SOCK_CLOEXEC", 0), NETLINK_SOCK_DIAG)
    try:
        sock.settimeout(timeout)
        sock.bind((0, 0))
    except BaseException:
        sock.close()
        raise
    return sock


def receive(sock, size, what):
    try:
        return sock.recv(size)
    except socket.timeout:
        raise OSError(errno.ETIMEDOUT, "%s did not answer" % what) from None


class NetlinkReader(object):
    """One NETLINK_SOCK_DIAG socket, kept open, dumping IPv4 and IPv6 on each `read()`.

    Raises OSError on open where the kernel (or a sandbox) has no sock_diag: the caller falls back."""

    kind = "sock_diag"

    def __init__(self, timeout=1.0):
        self.sock = open_socket(timeout)
        try:
            self.seq = 0
            self.families = [socket.AF_INET]
            if socket.has_ipv6:
                self.families.append(socket.AF_INET6)
            self.read()  # refused here (EACCES, EPROTONOSUPPORT ...) rather than on the first tick
        except BaseException:
            self.sock.close()
            raise

    def read(self):
        out = []
        for family in self.families:
            self.seq = (self.seq + 1) & 0xFFFFFFFF
            self.sock.send(request(family, self.seq))
            while True:
                data = receive(self.sock, 65536, "sock_diag")
                try:
                    conns, done = parse(data, self.seq)
                except OSError as exc:
                    if family == socket.AF_INET6 and exc.errno in (errno.ENOENT, errno.EAFNOSUPPORT):
                        self.families.remove(family)  # a kernel without IPv6: ask for IPv4 only from now on
                        break
                    raise
                out.extend(conns)
                if done or len(out) >= MAX_SOCKETS:
                    break
            if len(out) >= MAX_SOCKETS:
                # Whatever is left of this dump is read and dropped, so the next request starts clean.
                self._drain()
                break
        return out

    def lookup(self, conns):
        """The same sockets read again, one exact lookup each (Conns of an earlier `read`): fresh Conns for those
        still there, in order; a socket gone since is left out (ENOENT; ESTALE, an older kernel's answer when
        the lookup lands on another socket). Raises OSError as `read` does."""
        out = []
        for c in conns:
            self.seq = (self.seq + 1) & 0xFFFFFFFF
            self.sock.send(request(c.family, self.seq, c.sockid))
            while True:
                try:
                    found, _ = parse(receive(self.sock, 65536, "sock_diag"), self.seq)
                except OSError as exc:
                    if exc.errno not in (errno.ENOENT, errno.ESTALE):
                        raise
                    break  # closed since: no such socket
                if found:
                    out.extend(found)
                    break
        return out

    def _drain(self):
        try:
            self.sock.settimeout(0.05)
            while True:
                if parse(self.sock.recv(65536), self.seq)[1]:
                    break
        except (OSError, ValueError):
            pass
        finally:
            self.sock.settimeout(1.0)

    def close(self):
        self.sock.close()


# -- fallback: /proc/net/tcp{,6} ------------------------------------------------------------------------------
def _proc_address(family, text):
    """'0100007F:1F90' -> ('127.0.0.1', 8080). The address is 32-bit words in host order, hex."""
    addr, _, port = text.partition(":")
    raw = bytes.fromhex(addr)
    words = b"".join(struct.pack("=I", int.from_bytes(raw[i:i + 4], "big")) for i in range(0, len(raw), 4))
    return _address(family, words if family == socket.AF_INET6 else words[:4]), int(port, 16)


def parse_proc_net_tcp(text, family):
    """Connections in ESTABLISHED, CLOSE_WAIT or LISTEN from a /proc/net/tcp (or tcp6) table: queues,
    timer kind and inode; no times, no byte counters. Malformed lines are skipped."""
    out = []
    for line in text.split("\n")[1:]:
        f = line.split()
        if len(f) < 10:
            continue
        try:
            state = int(f[3], 16)
            if not STATES & (1 << state):
                continue
            local, lport = _proc_address(family, f[1])
            peer, pport = _proc_address(family, f[2])
            tx, _, rx = f[4].partition(":")
            timer = int(f[5].partition(":")[0], 16)
            out.append(Conn(family, state, local, lport, peer, pport, int(f[9]), int(f[7]), int(rx, 16),
                            int(tx, 16), timer))
        except (ValueError, IndexError):
            continue
    return out


class ProcNetReader(object):
    """The fallback: /proc/net/tcp and tcp6 under `root` (queues and timers only)."""

    kind = "coarse"

    def __init__(self, root="/proc"):
        self.root = root
        if not any(os.path.exists(root + "/net/" + name) for name in ("tcp", "tcp6")):
            raise OSError(errno.ENOENT, "no /proc/net/tcp")

    def read(self):
        out = []
        for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
            try:
                fd = os.open(self.root + "/net/" + name, os.O_RDONLY)
            except OSError:
                continue
            try:
                parts = []
                while True:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    parts.append(chunk)
            finally:
                os.close(fd)
            out.extend(parse_proc_net_tcp(b"".join(parts).decode("ascii", "replace"), family))
        return out

    def close(self):
        pass


def open_reader(root="/proc", netlink=True):
    """The best reader this host allows: netlink where it answers (and `root` is the live /proc), else the
    /proc tables, else None."""
    if netlink and root == "/proc":
        try:
            return NetlinkReader()
        except (OSError, ValueError, AttributeError):  # AttributeError: no AF_NETLINK (not Linux)
            pass
    try:
        return ProcNetReader(root)
    except OSError:
        return None
