"""Another network namespace's TCP sockets, for a job step that runs there (a container's build, a pod's script, a
test box): sock_diag answers only for the agent's own namespace, and entering another needs privileges the agent
does not have, but `/proc/PID/net/tcp` and `tcp6` list the sockets of PID's namespace to anyone who may read PID's
`/proc` entry. Each line gives a socket's state, its two ends and its inode: enough to tell a connection the step
opened to a peer (a request of its own, judged by the job-wait rule) from one it accepted or a listening socket
(a server's), never who spoke last (no `tcp_info` there). docs/agent.md, "A job step's wait"."""

import os
import socket
import struct

from wr_agent import tcp_rule

TABLE_BYTES = 1 << 20  # a namespace with more sockets than this holds is judged on the first ones
_WORD = struct.Struct("=I")  # the kernel prints each 32-bit word of an address in the machine's own byte order


class Sock(object):
    """One socket of another namespace, as its table line says (the fields a job step's wait reads of a Track)."""

    __slots__ = ("inbound", "inode", "peer", "pport", "state")

    def __init__(self, inode, state, peer, pport, inbound):
        self.inode, self.state, self.peer, self.pport, self.inbound = inode, state, peer, pport, inbound


def netns_id(root, pid):
    """The inode of `pid`'s network namespace, or None where it cannot be read (another user's process, a
    recorded /proc)."""
    try:
        return os.stat("%s/%s/ns/net" % (root, pid)).st_ino
    except OSError:
        return None


def _address(hex_addr):
    raw = b"".join(_WORD.pack(int(hex_addr[i:i + 8], 16)) for i in range(0, len(hex_addr), 8))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def parse(text):
    """{inode: Sock} from the text of `/proc/PID/net/tcp` (or `tcp6`): a connection whose local port a listening
    socket of the same table holds is one it accepted (inbound). Lines it cannot read are skipped."""
    rows, listening = [], set()
    for line in text.split(b"\n")[1:]:
        f = line.split()
        if len(f) < 10:
            continue
        try:
            lport = int(f[1].rpartition(b":")[2], 16)
            raddr, _, rport = f[2].partition(b":")
            state, inode = int(f[3], 16), int(f[9])
            peer = _address(raddr.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            continue
        if state == tcp_rule.LISTEN:
            listening.add(lport)
        rows.append((inode, state, peer, int(rport, 16), lport))
    return {inode: Sock(inode, state, peer, pport, state != tcp_rule.LISTEN and lport in listening)
            for inode, state, peer, pport, lport in rows if inode}


def table(root, pid):
    """{inode: Sock} of `pid`'s network namespace (IPv4 and IPv6), {} where it cannot be read."""
    found = {}
    for name in ("tcp", "tcp6"):
        try:
            with open("%s/%s/net/%s" % (root, pid, name), "rb") as f:
                text = f.read(TABLE_BYTES)
        except OSError:
            continue
        found.update(parse(text))
    return found
