"""Unix-socket facts from the kernel: sock_diag netlink for AF_UNIX, asked one socket at a time by inode.

Linux's NETLINK_SOCK_DIAG answers a `unix_diag_req` naming one socket's inode with one `unix_diag_msg`: its type
and state, and (as asked) the inode of its peer and the address it is bound to. An accepted socket carries its
listener's address, so the peer of a client's connection names the server it talks to
(`/var/run/postgresql/.s.PGSQL.5432`). Any user may ask, about every socket of the network namespace; the
standard library's AF_NETLINK is enough. The layout is the kernel's uapi header (linux/unix_diag.h), host-endian.

Asked only about the few sockets of a process that may be a job waiting on a peer (job_wait), never dumped per
tick.
"""

import errno
import socket
import struct

from wr_agent import tcp_diag

SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLMSG_ERROR, NLMSG_DONE = 2, 3
UDIAG_SHOW_NAME, UDIAG_SHOW_PEER = 0x1, 0x4
UNIX_DIAG_NAME, UNIX_DIAG_PEER = 0, 2
NOCOOKIE = 0xFFFFFFFF
SOCK_STREAM = 1
TCP_ESTABLISHED, TCP_LISTEN = 1, 10  # a Unix socket's states borrow TCP's numbers

_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
_REQ = struct.Struct("=BBHIIIII")  # family, protocol, pad, states, ino, show, cookie[2]
_MSG = struct.Struct("=BBBxIII")  # family, type, state, ino, cookie[2]
_RTA = struct.Struct("=HH")


class UnixSock(object):
    """One Unix socket: its type (1 stream), state (1 connected, 10 listening), peer inode (0: none) and the
    address it is bound to ("" unbound; an abstract name starts with "@")."""

    __slots__ = ("ino", "name", "peer", "state", "type")

    def __init__(self, ino, type_, state, peer=0, name=""):
        self.ino, self.type, self.state, self.peer, self.name = ino, type_, state, peer, name

    def __repr__(self):
        return "UnixSock(ino=%d type=%d state=%d peer=%d name=%r)" % (self.ino, self.type, self.state, self.peer,
                                                                      self.name)


def request(ino, seq):
    body = _REQ.pack(socket.AF_UNIX, 0, 0, 0xFFFFFFFF, ino, UDIAG_SHOW_NAME | UDIAG_SHOW_PEER, NOCOOKIE, NOCOOKIE)
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, seq, 0) + body


def _name(raw):
    if raw[:1] == b"\0":
        return "@" + raw[1:].decode("utf-8", "replace")
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def parse(buf, seq=None):
    """The UnixSock in one answer, or None when the kernel knows no such socket (ENOENT). Raises OSError for
    another refusal and ValueError for a malformed message."""
    off, n = 0, len(buf)
    while off + _NLMSGHDR.size <= n:
        length, kind, _flags, mseq, _pid = _NLMSGHDR.unpack_from(buf, off)
        if length < _NLMSGHDR.size or off + length > n:
            raise ValueError("truncated netlink message")
        body, end = off + _NLMSGHDR.size, off + length
        nxt = off + ((length + 3) & ~3)
        if seq is not None and mseq != seq:
            off = nxt
            continue  # an answer to an earlier request that timed out
        if kind == NLMSG_DONE:
            return None
        if kind == NLMSG_ERROR:
            code = struct.unpack_from("=i", buf, body)[0] if body + 4 <= end else -errno.EIO
            if code == 0:
                off = nxt
                continue
            if -code in (errno.ENOENT, errno.ESTALE):
                return None
            raise OSError(-code, "unix_diag: error %d" % -code)
        if kind == SOCK_DIAG_BY_FAMILY:
            if body + _MSG.size > end:
                raise ValueError("short unix_diag_msg")
            _family, type_, state, ino, _c0, _c1 = _MSG.unpack_from(buf, body)
            sock = UnixSock(ino, type_, state)
            a = body + _MSG.size
            while a + _RTA.size <= end:
                rlen, rtype = _RTA.unpack_from(buf, a)
                if rlen < _RTA.size or a + rlen > end:
                    break
                if rtype == UNIX_DIAG_PEER and rlen >= _RTA.size + 4:
                    sock.peer = struct.unpack_from("=I", buf, a + _RTA.size)[0]
                elif rtype == UNIX_DIAG_NAME:
                    sock.name = _name(buf[a + _RTA.size:a + rlen])
                a += (rlen + 3) & ~3
            return sock
        off = nxt
    return None


class UnixDiag(object):
    """One NETLINK_SOCK_DIAG socket, kept open; `lookup(ino)` asks about one Unix socket. Raises OSError on
    open where the kernel (or a sandbox) has no sock_diag for AF_UNIX."""

    def __init__(self, timeout=0.5):
        self.sock = tcp_diag.open_socket(timeout)
        self.seq = 0
        try:
            self.lookup(0xFFFFFFFE)  # refused here (EACCES, no unix_diag) rather than on a tick
        except BaseException:
            self.sock.close()
            raise

    def lookup(self, ino):
        """The socket with this inode in this network namespace, or None (not a Unix socket, or gone)."""
        self.seq = (self.seq + 1) & 0xFFFFFFFF
        self.sock.send(request(ino, self.seq))
        while True:
            data = tcp_diag.receive(self.sock, 8192, "unix_diag")
            _length, _kind, _flags, mseq, _pid = _NLMSGHDR.unpack_from(data, 0)
            if mseq == self.seq:
                return parse(data, self.seq)

    def close(self):
        self.sock.close()


def open_reader():
    """The reader where the kernel answers, else None (not Linux, no unix_diag, a sandbox)."""
    try:
        return UnixDiag()
    except (OSError, ValueError, AttributeError):
        return None
