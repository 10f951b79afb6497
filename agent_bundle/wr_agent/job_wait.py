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

from wr_agent import peer_turn, tcp_rule

WAIT_MIN = tcp_rule.WAIT_MIN
# Seconds a tick may come late (the tick thread wakes a few ms after its time): a length counted in whole ticks is
# taken as met this much short of it, or two ticks' 1.999 s apart would wait a third for the 2 s.
TICK_JITTER = 0.1
RETURN_GAP = tcp_rule.RETURN_GAP
SOCKETS_MAX = 64  # sockets of one process looked at (a process with more is judged on the first ones)
PARENT_WAIT_WCHANS = frozenset(("do_wait", "kernel_wait4", "__do_sys_wait4", "do_waitid"))
KEYS_MAX = 4096
# A step blocked reading one descriptor (its standard input from a pipe, `tail -f log | ingest`) waits on that, not
# on its peer. A poll or an epoll wait names no one descriptor in /proc/PID/syscall, so it is taken as waiting on
# the peer.
FD_READS = peer_turn.FD_READS
# ssh's options that take an argument (its getopt string), and those that open no remote command: -N (none), -W
# (a stdio forward, as ProxyJump runs it), -s (a subsystem: sftp, sshfs's mount), -O (a ControlMaster command),
# -G/-V/-Q (print and exit).
SSH_ARG_OPTS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
SSH_NO_COMMAND = frozenset("NWsOGVQ")


class Peer(object):
    """What a job step waits on: "tcp" (peer address, port) or "unix" (the server's socket address). `turn`: on a
    Unix socket, who holds the turn as last read (peer_turn: SERVER, or None when not known) and `server` the
    server end's inode; `exit`: the wait is answered by the process's exit (ssh running a remote command);
    `netns`: a TCP connection of another network namespace, (the pid whose /proc entry lists it, the table's name)
    (netns_tcp): the connection rule never saw it, so its cadence is the job memory's, as on a Unix socket.
    `person`: the step's stdin is a person's terminal, so it counts only while the server is known to hold it."""

    __slots__ = ("exit", "inode", "kind", "netns", "peer", "person", "port", "server", "turn")

    def __init__(self, kind, inode, peer, port=None, turn=None, server=None, exit=False, netns=None, person=False):
        self.kind, self.inode, self.peer, self.port = kind, inode, peer, port
        self.turn, self.server, self.exit, self.netns, self.person = turn, server, exit, netns, person

    def sure(self):
        """Counted whatever the cadence: the server is known to work on it, or only the exit answers it."""
        return self.exit or self.turn == peer_turn.SERVER

    def key(self):
        return (self.kind, self.peer, self.port)

    def facts(self, since):
        if self.kind == "tcp":
            return {"peer": self.peer, "port": self.port, "since": since}
        return {"path": self.peer, "since": since}


class Wait(object):
    __slots__ = ("checked", "counted", "owner", "peer", "start")

    def __init__(self, owner, peer, start, counted):
        self.owner, self.peer, self.start, self.counted = owner, peer, start, counted
        self.checked = start  # when who holds the turn was last read


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
        # A wait that began before the last one ended is that one looked at again (its parent ran: a sibling step
        # ended), not a listener asking again.
        cadence = ended is not None and 0 <= start - ended <= RETURN_GAP and (work is None or work < ended)
        return Wait(owner, peer, start, peer.sure() or not (cadence or tcp_heartbeat))

    def end(self, wait, now):
        """The process ran again: a wait that lasted WAIT_MIN is one the next may repeat."""
        if (wait.peer.kind == "unix" or wait.peer.netns is not None) and now - wait.start >= WAIT_MIN:
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


def persons_terminal(root, pid, fd_dir):
    """Whether the step's standard input is its controlling terminal: a person's session (`ssh host`, a `psql`
    prompt, a shell's job), judged by its keystrokes. A terminal that is not its controlling one is a tool's pty
    (ansible gives its ssh one for `become` prompts), not a person at a keyboard."""
    target = _link(fd_dir + "/0")
    if not _is_terminal(target):
        return False
    try:
        with open("%s/%s/stat" % (root, pid), "rb") as f:
            tty_nr = int(f.read(1024).rsplit(b")", 1)[1].split()[4])
        rdev = os.stat(fd_dir + "/0").st_rdev
    except (OSError, ValueError, IndexError):
        return True
    major, minor = (tty_nr >> 8) & 0xFFF, (tty_nr & 0xFF) | ((tty_nr >> 12) & 0xFFF00)
    return (os.major(rdev), os.minor(rdev)) == (major, minor)


def ssh_runs_command(argv):
    """Whether an ssh client's arguments ask the far side to run a command (`ssh host './migrate.sh'`, rsync's and
    git's `ssh host rsync --server …`): a channel that is answered by the command's exit status, not by its first
    line of output. A tunnel (-N), a stdio forward (-W), a subsystem (-s: sftp, sshfs), a ControlMaster command
    (-O) and a login shell (no command) are not. A RemoteCommand set only in ssh_config is not seen."""
    if not argv or os.path.basename(argv[0]) != "ssh":
        return False
    i, n, command, host = 1, len(argv), False, False
    while i < n:  # as ssh parses them: options, the destination, more options, then the command
        arg = argv[i]
        if arg == "--":
            i += 1
            if not host:
                host, i = True, i + 1
            break
        if not arg.startswith("-") or arg == "-":
            if host:
                break
            host = True
            i += 1
            continue
        j = 1
        while j < len(arg):
            c = arg[j]
            if c in SSH_NO_COMMAND:
                return False
            if c in SSH_ARG_OPTS:
                value = arg[j + 1:] if j + 1 < len(arg) else (argv[i + 1] if i + 1 < n else "")
                if j + 1 >= len(arg):
                    i += 1
                if c == "o":
                    key, _, val = value.replace("=", " ", 1).partition(" ")
                    key, val = key.strip().lower(), val.strip().lower()
                    if key == "sessiontype" and val in ("none", "subsystem"):
                        return False
                    if key == "remotecommand" and val and val != "none":
                        command = True
                break
            j += 1
        i += 1
    return command or (host and i < n)


def read_argv(root, pid):
    try:
        with open("%s/%s/cmdline" % (root, pid), "rb") as f:
            raw = f.read(8192)
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0")] if raw else []


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


def waited_for(root, pid, ppid, read_wchan):
    """Whether `pid` is a step its parent waits for: the parent blocked in wait(), or reading the pipe `pid` writes
    its output to. The parent's wchan is read first: most processes looked at are daemons nobody waits on."""
    wchan = read_wchan(ppid)
    if wchan is None or (wchan not in PARENT_WAIT_WCHANS and (wchan in ("0", "") or "nanosleep" in wchan)):
        return False
    out = _link("%s/%s/fd/1" % (root, pid))
    return parent_waits(root, ppid, out if out.startswith("pipe:[") else "", lambda _pid: wchan)


def writes_output(root, pid):
    """Whether the process's standard output is a pipe (the next step of its job) or a file: what it writes
    there is the job's output, not a display (a terminal) or a discard (/dev/null), nor a socket's chatter."""
    out = _link("%s/%s/fd/1" % (root, pid))
    return out.startswith("pipe:[") or (out.startswith("/") and not out.startswith("/dev/"))


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
    call = peer_turn.read_syscall("%s/%s/syscall" % (root, pid))
    if isinstance(call, tuple) and call[0] in FD_READS and call[1]:
        return call[1][0]
    return None


def find_peers(root, pid, ppid, tcp_tracks, tcp_listening, unix, read_wchan, server_turn=None, comm="",
               netns_table=None):
    """The peers a blocked process `pid` waits on as a step of its job, or [] (see the module's rule).
    `server_turn(inode[, table])`: who holds the turn at the server end of a connection (peer_turn), or None; the
    table of another namespace's TCP sockets where the connection is one of them.
    `netns_table()`: where `pid` runs in another network namespace, that namespace's TCP sockets (netns_tcp), read
    once and only if one of its sockets is not the agent's own namespace's; a connection there to a server in the
    same namespace is judged by whose turn it is at the server's end, as a Unix one is."""
    fd_dir = "%s/%s/fd" % (root, pid)
    exit_ = comm == "ssh" and ssh_runs_command(read_argv(root, pid))
    if not exit_ and not waited_for(root, pid, ppid, read_wchan):
        return []
    person = persons_terminal(root, pid, fd_dir)
    socks = socket_inodes(fd_dir)
    peers, other = [], None
    for ino in socks:
        if ino in tcp_listening:
            return []
        t, netns = tcp_tracks.get(ino), None
        if t is None and netns_table is not None:
            other = netns_table() if other is None else other
            t = other.get(ino)
            if t is not None:
                if t.state == tcp_rule.LISTEN:
                    return []
                netns = (pid, t.name)
        if t is not None:
            if not t.inbound and t.state == tcp_rule.ESTABLISHED:
                turn = server = None
                if netns is not None and server_turn is not None:
                    # The server in the same namespace (a container's database beside its job): whose turn it is,
                    # as on a Unix socket, since this namespace's table says nothing of who spoke last.
                    end = t.server_end(other)
                    server = None if end is None else end.inode
                    turn = None if server is None else server_turn(server, other)
                    if turn == peer_turn.CLIENT:
                        continue  # the server waits for this client: nothing asked is in hand (a worker's pop)
                if person and turn != peer_turn.SERVER:
                    continue  # a person's session, judged by its keystrokes unless the server holds a request
                peers.append(Peer("tcp", ino, t.peer, t.pport, turn=turn, server=server if turn else None,
                                  exit=exit_, netns=netns, person=person))
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
        if server is None or not server.name or s.name:
            continue
        turn = server_turn(s.peer) if server_turn is not None else None
        if turn == peer_turn.CLIENT:
            continue  # the server waits for this client: nothing asked is in hand (a listener, a prompt)
        if turn == peer_turn.SERVER or not person:
            peers.append(Peer("unix", ino, server.name, turn=turn, server=s.peer, exit=exit_, person=person))
    fd = blocked_fd(root, pid) if peers else None
    if fd is not None:
        target = _link("%s/%d" % (fd_dir, fd))
        peers = [p for p in peers if target == "socket:[%d]" % p.inode]
    return peers
