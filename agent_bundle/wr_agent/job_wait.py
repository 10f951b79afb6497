"""A job step waiting on a peer (docs/agent.md, "A job waiting on a peer"): work the connection facts alone miss.

A blocked process is a step its job is waiting on when
* it has not run for WAIT_MIN seconds and is not in a timer sleep or a FIFO open (those are their own signals);
* its standard input is not a terminal (a person's session, `ssh host` or a `psql` prompt, is judged by its
  keystrokes, never by its connection);
* its parent waits for it: blocked in wait() (`do_wait`), or blocked reading the pipe the step writes its
  output into (`$(ssh host cmd)`, `subprocess.run(..., capture_output=True)`);
* it listens on no socket (a server waiting for clients is not a job step: a dev server, a notebook, a tunnel's
  `ssh -L`);
* it holds a connection to a peer: a TCP connection it opened, or a Unix stream socket connected to a server's
  bound address (a database's `.s.PGSQL.5432`). A socketpair to its own child is no peer;
* where /proc/PID/syscall says it is blocked reading one descriptor, that descriptor is the peer's socket (a step
  reading its standard input from an idle pipe waits on that, whatever connection it holds).

The wait is work while it lasts, silent or not: `ssh host 'deploy'` whose remote end printed a line and went
quiet, `psql -c 'select pg_sleep(75)'` over the database's Unix socket (where the kernel keeps no times of who
spoke last). A listener's cadence is not: over TCP, a key (process and peer) on which the connection rule saw a
long wait end with no work since (a job worker's `BLPOP` answered nothing, re-asked); over a Unix socket, where
only the process's own wakes are seen, a block that follows an earlier one of WAIT_MIN or more on the same key
within RETURN_GAP with no CPU vote by it since. The first wait counts, as for the connection rule.

Facts come from /proc (fd links, the parent's wchan) and unix_diag, read once per block of a process (when it
has been blocked WAIT_MIN), never per tick; the memory is pure and unit-tested on a fake clock.
"""

import collections
import os

from wr_agent import tcp_rule

WAIT_MIN = tcp_rule.WAIT_MIN
RETURN_GAP = tcp_rule.RETURN_GAP
SOCKETS_MAX = 64  # sockets of one process looked at (a process with more is judged on the first ones)
PARENT_WAIT_WCHANS = frozenset(("do_wait", "kernel_wait4", "__do_sys_wait4", "do_waitid"))
KEYS_MAX = 4096
# Syscalls that read one file descriptor (their first argument), by machine: a step blocked reading something else
# (its standard input from a pipe, `tail -f log | ingest`) waits on that, not on its peer. A poll or an epoll wait
# names no one descriptor in /proc/PID/syscall, so it is taken as waiting on the peer.
FD_READS = {"x86_64": frozenset((0, 19, 45, 47)),  # read, readv, recvfrom, recvmsg
            "aarch64": frozenset((63, 65, 207, 212))}.get(os.uname().machine, frozenset())


class Peer(object):
    """What a job step waits on: "tcp" (peer address, port) or "unix" (the server's socket address)."""

    __slots__ = ("inode", "kind", "peer", "port")

    def __init__(self, kind, inode, peer, port=None):
        self.kind, self.inode, self.peer, self.port = kind, inode, peer, port

    def key(self):
        return (self.kind, self.peer, self.port)

    def facts(self, since):
        if self.kind == "tcp":
            return {"peer": self.peer, "port": self.port, "since": since}
        return {"path": self.peer, "since": since}


class Wait(object):
    __slots__ = ("counted", "owner", "peer", "start")

    def __init__(self, owner, peer, start, counted):
        self.owner, self.peer, self.start, self.counted = owner, peer, start, counted


class Memory(object):
    """Which waits count: the first on a key does; one that follows a finished one with no work since, within
    RETURN_GAP, is a listener's cadence. Pure: the clock comes in."""

    def __init__(self):
        self.ended = collections.OrderedDict()  # (owner, peer key) -> when the last counted-length wait ended
        self.work = {}  # owner -> when it last did CPU work

    def begin(self, owner, peer, start, tcp_heartbeat=False):
        """A new wait of `owner` on `peer` that began (its last run) at `start`."""
        key = (owner, peer.key())
        ended = self.ended.get(key)
        work = self.work.get(owner)
        cadence = ended is not None and start - ended <= RETURN_GAP and (work is None or work < ended)
        return Wait(owner, peer, start, not (cadence or tcp_heartbeat))

    def end(self, wait, now):
        """The process ran again: a wait that lasted WAIT_MIN is one the next may repeat."""
        if wait.peer.kind == "unix" and now - wait.start >= WAIT_MIN:
            key = (wait.owner, wait.peer.key())
            self.ended[key] = now
            self.ended.move_to_end(key)
            while len(self.ended) > KEYS_MAX:
                self.ended.popitem(last=False)

    def note_work(self, owners, now):
        for owner in owners:
            self.work[owner] = now
        if len(self.work) > KEYS_MAX:
            self.work = dict(sorted(self.work.items(), key=lambda kv: kv[1])[-KEYS_MAX // 2:])


def _link(path):
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _is_terminal(target):
    return target.startswith("/dev/pts/") or target.startswith("/dev/tty") or target == "/dev/console"


def socket_inodes(fd_dir, limit=SOCKETS_MAX):
    """The socket inodes among a process's open files."""
    socks = []
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return socks
    for fd in names:
        target = _link(fd_dir + "/" + fd)
        if target.startswith("socket:[") and len(socks) < limit:
            try:
                socks.append(int(target[8:-1]))
            except ValueError:
                pass
    return socks


def parent_waits(root, ppid, out_pipe, read_wchan):
    """Whether the parent waits for its child: blocked in wait(), or blocked holding the read end of the pipe the
    child writes its output to. `read_wchan(pid)`: the parent's wchan or None."""
    wchan = read_wchan(ppid)
    if wchan is None:
        return False
    if wchan in PARENT_WAIT_WCHANS:
        return True
    if not out_pipe or wchan in ("0", "") or "nanosleep" in wchan:
        return False
    return reads_pipe(root, ppid, out_pipe)


def reads_pipe(root, pid, pipe):
    """Whether `pid` holds the read end of `pipe` ("pipe:[ino]"): its parent reads what the child writes. The
    write end every child inherits with its parent's output is not it (fdinfo's flags say which end)."""
    fd_dir = "%s/%s/fd" % (root, pid)
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for fd in names:
        if _link(fd_dir + "/" + fd) == pipe:
            try:
                with open("%s/%s/fdinfo/%s" % (root, pid, fd), "rb") as f:
                    for line in f.read(512).split(b"\n"):
                        if line.startswith(b"flags:") and int(line.split()[1], 8) & 3 == os.O_RDONLY:
                            return True
            except (OSError, ValueError, IndexError):
                continue
    return False


def blocked_fd(root, pid):
    """The descriptor a blocked process reads (from /proc/PID/syscall), or None: in a poll, an epoll wait, or the
    file is not readable (another user's process, a kernel that hides it)."""
    try:
        with open("%s/%s/syscall" % (root, pid), "rb") as f:
            fields = f.read(256).split()
        if len(fields) > 1 and int(fields[0]) in FD_READS:
            return int(fields[1], 16)
    except (OSError, ValueError):
        pass
    return None


def find_peers(root, pid, ppid, tcp_tracks, tcp_listening, unix, read_wchan):
    """The peers a blocked process `pid` waits on as a step of its job, or [] (see the module's rule)."""
    fd_dir = "%s/%s/fd" % (root, pid)
    wchan = read_wchan(ppid)  # first: most blocked processes are daemons nobody waits on
    if wchan is None or (wchan not in PARENT_WAIT_WCHANS and (wchan in ("0", "") or "nanosleep" in wchan)):
        return []
    if _is_terminal(_link(fd_dir + "/0")):
        return []
    out = _link(fd_dir + "/1")
    if not parent_waits(root, ppid, out if out.startswith("pipe:[") else "", lambda _pid: wchan):
        return []
    socks = socket_inodes(fd_dir)
    peers = []
    for ino in socks:
        if ino in tcp_listening:
            return []
        t = tcp_tracks.get(ino)
        if t is not None:
            if not t.inbound and t.state == tcp_rule.ESTABLISHED:
                peers.append(Peer("tcp", ino, t.peer, t.pport))
            continue
        if unix is None:
            continue
        try:
            s = unix.lookup(ino)
        except (OSError, ValueError):
            s = None
        if s is None:
            continue
        if s.state == 10:  # listening
            return []
        if s.type != 1 or s.state != 1 or not s.peer:
            continue
        try:
            server = unix.lookup(s.peer)
        except (OSError, ValueError):
            server = None
        if server is not None and server.name and not s.name:
            peers.append(Peer("unix", ino, server.name))
    fd = blocked_fd(root, pid) if peers else None
    if fd is not None:
        target = _link("%s/%d" % (fd_dir, fd))
        peers = [p for p in peers if target == "socket:[%d]" % p.inode]
    return peers
