"""Whose turn it is on a connection between two processes of this box (docs/agent.md, "A job waiting on a peer").

A client blocked on a Unix stream socket to a server in the same box asked for something, or is waiting for the
server to push. The kernel keeps no times for a Unix socket, but it shows what the server is blocked in: each of
its threads' system call and arguments (`/proc/PID/task/TID/syscall`), and the descriptors an epoll instance
watches (`/proc/PID/fdinfo/EPFD`, with each one's inode). So:

* SERVER: no thread of the server waits to read this connection. It works on what was asked (a query's
  `pg_sleep`, a lock it waits for, `DEBUG SLEEP`, its own request to somewhere else), or on something else first:
  either way the client waits for an answer that is still coming, and that is work.
* CLIENT: a thread waits to read it (a `read`/`recv` on that descriptor, or an epoll wait on a set that watches
  it for input). The server has nothing in hand for this client: the client is a listener or subscriber between
  events (`LISTEN`, `SUBSCRIBE`, a `BLPOP` on an empty queue), or a prompt. Whatever work the server does for it
  meanwhile shows in the server's own signals (its CPU, its outbound waits, its children).
* None: not known. The server's files cannot be read (another user's, unless the agent is root; under Yama's
  `ptrace_scope` 1 a thread's system call is readable only in the agent's own descendants), or a thread
  waits in `poll`/`select` (which descriptors is in its memory, not in /proc), or in an epoll set that watches
  the connection edge-triggered (registered for its whole life, as Go's netpoller, tokio and Netty do: an idle
  event loop waits on it whether or not a request is in hand), or the server process is not found.

What it costs: the server's descriptors and threads are read once per block of the client (never per tick), and
finding the server scans the fd links of the processes listed (a few ms at 500 processes).
"""

import errno
import os

# System-call numbers by machine. A read names its descriptor in its first argument, an epoll wait its epoll
# instance; poll and select name theirs only in memory.
_MACHINE = os.uname().machine
FD_READS = {"x86_64": frozenset((0, 19, 45, 47)),  # read, readv, recvfrom, recvmsg
            "aarch64": frozenset((63, 65, 207, 212))}.get(_MACHINE, frozenset())
EPOLL_WAITS = {"x86_64": frozenset((232, 281, 441)),  # epoll_wait, epoll_pwait, epoll_pwait2
               "aarch64": frozenset((22, 441))}.get(_MACHINE, frozenset())
SELECTS = {"x86_64": frozenset((7, 23, 270, 271)),  # poll, select, pselect6, ppoll
           "aarch64": frozenset((72, 73))}.get(_MACHINE, frozenset())
EPOLLIN, EPOLLET = 0x1, 1 << 31
TASKS_MAX = 64  # threads of one server looked at (a server with more: not known)

SERVER, CLIENT = "server", "client"
DENIED = "denied"  # read_syscall: the file is there but may not be read


def read_syscall(path):
    """(number, [args]) of a blocked task, "running", None (gone, or blocked outside a system call), or DENIED: the
    kernel refused the read, as it does for another user's task, and for one of the agent's own user's that is not
    its descendant under Yama's `ptrace_scope` 1 (Ubuntu's default: the mode bits allow the read, the read fails)."""
    try:
        with open(path, "rb") as f:
            fields = f.read(256).split()
    except OSError as exc:
        return None if exc.errno in (errno.ENOENT, errno.ESRCH) else DENIED
    if not fields:
        return None
    if fields[0] == b"running":
        return "running"
    try:
        nr = int(fields[0])
        return (nr, [int(a, 16) for a in fields[1:7]]) if nr >= 0 else None
    except ValueError:
        return None


def epoll_inodes(root, pid, epfd):
    """{inode: edge-triggered} for what an epoll instance watches for input, from its fdinfo lines (`tfd: N events:
    HEX ... ino:HEX`), or None if it cannot be read."""
    try:
        with open("%s/%s/fdinfo/%d" % (root, pid, epfd), "rb") as f:
            lines = f.read(1 << 16).split(b"\n")
    except OSError:
        return None
    watched = {}
    for line in lines:
        if not line.startswith(b"tfd:"):
            continue
        fields = line.split()
        try:
            events = int(fields[fields.index(b"events:") + 1], 16)
            ino = next(int(x[4:], 16) for x in fields if x.startswith(b"ino:"))
        except (ValueError, IndexError, StopIteration):
            continue
        if events & EPOLLIN:
            watched[ino] = bool(events & EPOLLET)
    return watched


def _fd_is(root, pid, fd, inode):
    try:
        return os.readlink("%s/%s/fd/%d" % (root, pid, fd)) == "socket:[%d]" % inode
    except OSError:
        return False


def turn(root, pid, inode):
    """Who holds the turn on the server end `inode` (a socket of process `pid`): SERVER, CLIENT or None."""
    try:
        tasks = os.listdir("%s/%s/task" % (root, pid))
    except OSError:
        return None
    if len(tasks) > TASKS_MAX:
        return None
    unknown, read = False, 0
    for tid in tasks:
        call = read_syscall("%s/%s/task/%s/syscall" % (root, pid, tid))
        if call == DENIED:
            return None  # not the agent's to read: nothing of it can be told
        if call is None:
            continue  # ended since the listing, or blocked outside a system call
        read += 1
        if call == "running":
            continue
        nr, args = call
        if nr in FD_READS and args and _fd_is(root, pid, args[0], inode):
            return CLIENT
        if nr in EPOLL_WAITS and args:
            watched = epoll_inodes(root, pid, args[0])
            if watched is None:
                return None
            if watched.get(inode):
                # Edge-triggered, registered for the connection's life (Go's netpoller, tokio, Netty, Envoy): an
                # idle loop waits on it whether or not a request is in hand, so it says nothing of whose turn it is.
                unknown = True
            elif inode in watched:
                return CLIENT
        elif nr in SELECTS:
            unknown = True
    return None if unknown or not read else SERVER  # no thread read (gone, or no such file): not known


def turn_of(root, owners, inode):
    """Who holds the turn on the server end `inode`, held by the processes `owners` (a forked server may share
    it): CLIENT if any of them waits to read it, SERVER if each is known not to, else None."""
    seen = [turn(root, pid, inode) for pid in owners]
    if CLIENT in seen:
        return CLIENT
    return SERVER if seen and all(t == SERVER for t in seen) else None


def socket_owners(root, pids, inode, limit=4):
    """The processes among `pids` holding socket `inode` (at most `limit`; none found: not there, or not
    readable)."""
    target = "socket:[%d]" % inode
    owners = []
    for pid in pids:
        fd_dir = "%s/%s/fd" % (root, pid)
        try:
            names = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in names:
            try:
                if os.readlink(fd_dir + "/" + fd) == target:
                    owners.append(pid)
                    break
            except OSError:
                continue
        if len(owners) >= limit:
            break
    return owners
