"""Whose turn it is on a Unix connection in this box (wr_agent/peer_turn.py), read from real server processes
blocked the ways servers block (a recv on the connection, an epoll wait that watches it, one that does not, a
sleep, a poll); the fdinfo parser on lines as the kernel writes them; ssh's command detection and the person's
terminal test (wr_agent/job_wait.py) on real ptys; a file-lock wait's kind (proc_sampler)."""

import os
import socket
import subprocess
import sys
import time

import pytest
from wr_agent import exclusions, job_wait, peer_turn, proc_entry

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")

# Servers that accept one client on a Unix socket, read its request, then block as named.
SERVERS = {
    # waits for the client's next message with recv: the client's turn
    "recv": "c.recv(1)",
    # an event loop watching the connection for input (redis, postgres between queries): the client's turn
    "epoll_watching": "import select; e = select.epoll(); e.register(c, select.EPOLLIN); e.poll()",
    # an event loop on another set (postgres's pg_sleep waits on its latch, not the client): the server's turn
    "epoll_elsewhere": "import select; r, w = os.pipe(); e = select.epoll(); e.register(r, select.EPOLLIN); e.poll()",
    # working on it, off CPU (redis's DEBUG SLEEP): the server's turn
    "sleep": "time.sleep(60)",
    # a poll names its descriptors only in memory: not known
    "poll": "import select; p = select.poll(); p.register(c, select.POLLIN); p.poll()",
}


def _serve(tmp_path, how):
    path = str(tmp_path / "srv.sock")
    code = ("import os, socket, sys, time\n"
            "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); print('ready', flush=True)\n"
            "c, _ = s.accept(); c.recv(1)\n" + SERVERS[how] + "\n")
    server = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert server.stdout.readline().strip() == b"ready"
    client = socket.socket(socket.AF_UNIX)
    client.connect(path)
    client.sendall(b"q")
    return server, client


def _server_end(server, client_inode, reader):
    """The server end's inode, once the server accepted (an embryo socket, still in the listen queue, has none)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        peer = reader.lookup(client_inode).peer
        if peer:
            return peer
        time.sleep(0.02)
    return 0


@linux
@pytest.mark.parametrize("how,expected", [
    ("recv", peer_turn.CLIENT), ("epoll_watching", peer_turn.CLIENT), ("epoll_elsewhere", peer_turn.SERVER),
    ("sleep", peer_turn.SERVER), ("poll", None)])
def test_who_holds_the_turn_is_read_from_what_the_server_is_blocked_in(tmp_path, how, expected):
    from wr_agent import unix_diag
    reader = unix_diag.open_reader()
    if reader is None:
        pytest.skip("no unix_diag here")
    server, client = _serve(tmp_path, how)
    try:
        ino = os.fstat(client.fileno()).st_ino
        end = _server_end(server, ino, reader)
        assert end
        owners = peer_turn.socket_owners("/proc", [str(os.getpid()), str(server.pid)], end)
        assert owners == [str(server.pid)]  # our end is another inode: we do not hold the server's
        deadline = time.monotonic() + 10
        seen = "never read"
        while time.monotonic() < deadline:  # until the server has settled into its block
            seen = peer_turn.turn_of("/proc", owners, end)
            if seen == expected:
                break
            time.sleep(0.05)
        assert seen == expected
    finally:
        server.kill()
        server.wait(timeout=10)
        client.close()
        reader.close()


def test_an_epoll_fdinfo_gives_the_inodes_it_watches_for_input(tmp_path):
    fdinfo = tmp_path / "9" / "fdinfo"
    fdinfo.mkdir(parents=True)
    (fdinfo / "4").write_text(
        "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n"
        "tfd:        6 events:       19 data:     5560ba1532a8  pos:0 ino:20d0 sdev:9\n"
        "tfd:        7 events:       1c data:     5560ba1532c0  pos:0 ino:14 sdev:10\n"
        "tfd:        8 events: 80000019 data:     5560ba1532d8  pos:0 ino:20d4 sdev:9\n"
        "tfd:        oops\n")
    # 0x1c: output and hang-up only; 0x80000019: input, edge-triggered (registered for the connection's life)
    assert peer_turn.epoll_inodes(str(tmp_path), "9", 4) == {0x20d0: False, 0x20d4: True}
    assert peer_turn.epoll_inodes(str(tmp_path), "9", 5) is None


def test_a_syscall_line_is_read_as_number_and_arguments_running_or_unknown(tmp_path):
    f = tmp_path / "syscall"
    f.write_text("232 0x8 0x5560ba0e7568 0x1 0xffffffff 0x0 0x0 0x7ffd 0x7f\n")
    assert peer_turn.read_syscall(str(f)) == (232, [8, 0x5560ba0e7568, 1, 0xffffffff, 0, 0])
    f.write_text("running\n")
    assert peer_turn.read_syscall(str(f)) == "running"
    f.write_text("-1 0x7ffd 0x7f\n")  # blocked outside a system call
    assert peer_turn.read_syscall(str(f)) is None
    assert peer_turn.read_syscall(str(tmp_path / "gone")) is None  # the task ended


def test_a_server_thread_whose_system_call_may_not_be_read_leaves_the_turn_unknown(tmp_path):
    """Under Yama's `ptrace_scope` 1 (Ubuntu's default) an agent running as the box's user may not read the system
    call of its own user's server (not its descendant): the mode bits allow the read, the kernel refuses it. That is
    not known, as for another user's server. Before, only the mode bits were asked, so the refused thread was
    skipped and the turn read as the server's: a worker's pop on an empty queue counted as a query in hand. This
    kernel has no Yama; the refused read is stood in for by an entry that cannot be read as a file."""
    task = tmp_path / "42" / "task"
    (task / "42").mkdir(parents=True)
    (task / "42" / "syscall").mkdir()  # readable by its mode, refused as a file
    assert peer_turn.read_syscall(str(task / "42" / "syscall")) == peer_turn.DENIED
    assert peer_turn.turn(str(tmp_path), "42", 1234) is None
    (task / "42" / "syscall").rmdir()
    (task / "42" / "syscall").write_text("61 0x4 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f\n")  # wait4: not reading it
    assert peer_turn.turn(str(tmp_path), "42", 1234) == peer_turn.SERVER
    (task / "42" / "syscall").unlink()  # a kernel without the file, or the thread gone: nothing was read
    assert peer_turn.turn(str(tmp_path), "42", 1234) is None


@pytest.mark.parametrize("argv,runs", [
    ("ssh host ./migrate.sh", True),
    ("ssh -p 2222 -o BatchMode=yes deploy@host ls -l", True),
    ("ssh -l u host rsync --server -e.LsfxC . /srv", True),  # rsync's transport
    ("ssh -tt -o ControlMaster=auto -o ControlPersist=60s host /bin/sh -c 'echo ~'", True),  # ansible's
    ("ssh host -p 22 uptime", True),  # options after the destination, as ssh parses them
    ("ssh -i key -- host cmd", True),
    ("ssh -oRemoteCommand=top host", True),
    ("/usr/bin/ssh host make", True),
    ("ssh host", False),  # a login shell: a person's session
    ("ssh -N -L 8888:localhost:8888 host", False),  # a tunnel
    ("ssh -fNT -R 9000:localhost:22 host", False),
    ("ssh -W h:22 jump", False),  # a stdio forward (ProxyJump)
    ("ssh -x -a -oClearAllForwardings=yes -2 host -s sftp", False),  # sshfs's subsystem
    ("ssh -o SessionType=none host", False),
    ("ssh -O exit host", False),
    ("ssh host -p 22", False),
    ("autossh -M 0 host cmd", False),  # not ssh itself: autossh runs one
])
def test_an_ssh_command_line_runs_a_remote_command_or_not(argv, runs):
    assert job_wait.ssh_runs_command(argv.split()) is runs


@linux
def test_a_pty_as_stdin_is_a_persons_terminal_only_when_it_is_the_controlling_one():
    """A shell's job in a terminal has the terminal as both; a tool that gives its child a pty of its own
    (ansible's ssh) does not make it the child's controlling terminal."""
    master, slave = os.openpty()
    code = "import time; time.sleep(30)"
    tool = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=subprocess.DEVNULL)
    # setsid, then opening the pty makes it the controlling terminal (as a terminal emulator's shell has it)
    name = os.ttyname(slave)
    person = subprocess.Popen([sys.executable, "-c", "import os, sys, time; os.setsid(); "
                               "fd = os.open(sys.argv[1], os.O_RDWR); os.dup2(fd, 0); print('ok', flush=True); "
                               "time.sleep(30)", name], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert person.stdout.readline().strip() == b"ok"
        assert not job_wait.persons_terminal("/proc", tool.pid, f"/proc/{tool.pid}/fd")
        assert job_wait.persons_terminal("/proc", person.pid, f"/proc/{person.pid}/fd")
        nul = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
        try:
            assert not job_wait.persons_terminal("/proc", nul.pid, f"/proc/{nul.pid}/fd")
        finally:
            nul.kill()
            nul.wait(timeout=10)
    finally:
        for p in (tool, person):
            p.kill()
            p.wait(timeout=10)
        os.close(master)
        os.close(slave)


@linux
def test_a_process_queued_for_a_file_lock_is_in_a_lock_wait(tmp_path):
    lock = str(tmp_path / "deploy.lock")
    hold = ("import fcntl, sys, time\nf = open(sys.argv[1], 'w'); fcntl.%s(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True); time.sleep(30)\n")
    for how in ("flock", "lockf"):
        holder = subprocess.Popen([sys.executable, "-c", hold % how, lock], stdout=subprocess.PIPE)
        assert holder.stdout.readline().strip() == b"held"
        waiter = subprocess.Popen([sys.executable, "-c", hold % how, lock], stdout=subprocess.PIPE)
        try:
            deadline, kind = time.monotonic() + 10, None
            while time.monotonic() < deadline and kind != "lock":
                with open(f"/proc/{waiter.pid}/wchan") as f:
                    wchan = f.read().strip()
                kind = proc_entry.kind(wchan)
                time.sleep(0.05)
            assert kind == "lock", wchan
            assert wchan in exclusions.LOCK_WCHANS
        finally:
            for p in (holder, waiter):
                p.kill()
                p.wait(timeout=10)
