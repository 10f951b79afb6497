"""Another network namespace's TCP sockets, for a job step that runs there (a container's build, a pod's script, a
test box): sock_diag answers only for the agent's own namespace, and entering another needs privileges the agent
does not have, but `/proc/PID/net/tcp` and `tcp6` list the sockets of PID's namespace to anyone who may read PID's
`/proc` entry. Each line gives a socket's state, its two ends and its inode: enough to tell a connection the step
opened to a peer (a request of its own, judged by the job-wait rule) from one it accepted or a listening socket
(a server's), never who spoke last (no `tcp_info` there). docs/agent.md, "A job waiting on a peer"."""

import os
import socket
import struct

from wr_agent import tcp_diag, tcp_rule

TABLE_BYTES = 1 << 20  # a namespace with more sockets than this holds is judged on the first ones
EPHEMERAL_LOW = 32768  # the kernel's default ip_local_port_range starts here: a client's own port is at or above it
_WORD = struct.Struct("=I")  # the kernel prints each 32-bit word of an address in the machine's own byte order


class Sock(object):
    """One socket of another namespace, as its table line says (the fields a job step's wait reads of a Track)."""

    __slots__ = ("inbound", "inode", "laddr", "lport", "name", "peer", "pport", "state")

    def __init__(self, inode, state, peer, pport, inbound, name="tcp", laddr=None, lport=None):
        self.inode, self.state, self.peer, self.pport, self.inbound = inode, state, peer, pport, inbound
        self.name = name  # the table that lists it: "tcp" or "tcp6"
        self.laddr, self.lport = laddr, lport  # the local address as the table writes it (hex), named when asked

    @property
    def local(self):
        """The local address, named as the peer's is (an IPv4-mapped one as IPv4), or None where it cannot be read.
        Named only where asked: `server_end`, for the few sockets whose ports match."""
        try:
            return None if self.laddr is None else _address(self.laddr.decode("ascii"))
        except (ValueError, UnicodeDecodeError, struct.error):
            return None

    def server_end(self, table):
        """The socket of `table` at the other end of this outbound connection (a server in the same namespace,
        which accepted it), or None: the server is elsewhere. A server on `[::]` lists an IPv4 client's connection
        in `tcp6`, IPv4-mapped: named, both ends read as IPv4."""
        for s in table.values():
            if (s.inbound and s.lport == self.pport and s.pport == self.lport and s.peer == self.local
                    and s.local == self.peer):
                return s
        return None


def netns_id(root, pid):
    """The inode of `pid`'s network namespace, or None where it cannot be read (another user's process, a
    recorded /proc)."""
    try:
        return os.stat("%s/%s/ns/net" % (root, pid)).st_ino
    except OSError:
        return None


def _address(hex_addr):
    if len(hex_addr) not in (8, 32):
        raise ValueError(hex_addr)
    raw = b"".join(_WORD.pack(int(hex_addr[i:i + 8], 16)) for i in range(0, len(hex_addr), 8))
    return tcp_diag._address(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)  # named as sock_diag's are


def _inbound(lport, pport, listening):
    """A connection it accepted: its local port is a listening socket's, or (a server that closed its listener after
    the accept, as `nc -l` does) a fixed port below the ephemeral range talking to a peer's port inside it."""
    return lport in listening or lport < EPHEMERAL_LOW <= pport


def parse(text, name="tcp"):
    """{inode: Sock} from the text of `/proc/PID/net/<name>` (`tcp` or `tcp6`). Lines it cannot read are skipped."""
    rows, listening = [], set()
    lines = text.split(b"\n")
    if len(text) >= TABLE_BYTES:
        lines.pop()  # cut off by the read: its inode may be cut too
    for line in lines[1:]:
        f = line.split()
        if len(f) < 10:
            continue
        try:
            laddr, _, lport = f[1].rpartition(b":")
            lport = int(lport, 16)
            raddr, colon, rport = f[2].partition(b":")
            state, inode, pport = int(f[3], 16), int(f[9]), int(rport, 16)
            peer = _address(raddr.decode("ascii"))
        except (ValueError, UnicodeDecodeError, struct.error):
            continue
        if not colon or min(lport, pport, inode) < 0:
            continue
        if state == tcp_rule.LISTEN:
            listening.add(lport)
        rows.append((inode, state, peer, pport, lport, laddr))
    return {inode: Sock(inode, state, peer, pport, state != tcp_rule.LISTEN and _inbound(lport, pport, listening),
                        name, laddr, lport) for inode, state, peer, pport, lport, laddr in rows if inode}


def table(root, pid, names=("tcp", "tcp6")):
    """{inode: Sock} of `pid`'s network namespace (IPv4 and IPv6, or the files `names`), {} where it cannot be read.
    The kernel builds the text by walking the host's TCP hash tables: a read costs with every socket of the host."""
    found = {}
    for name in names:
        try:
            with open("%s/%s/net/%s" % (root, pid, name), "rb") as f:
                text = f.read(TABLE_BYTES)
        except OSError:
            continue
        found.update(parse(text, name))
    return found
