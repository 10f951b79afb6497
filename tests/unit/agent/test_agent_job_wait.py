"""A job step waiting on a peer (wr_agent/job_wait.py): the cadence memory on a fake clock, the unix_diag parser
on answers built as the kernel lays them out, and the rule's /proc facts on a real process tree and sockets."""

import contextlib
import os
import socket
import struct
import subprocess
import sys
import time

import pytest
from wr_agent import job_wait, unix_diag

PG = job_wait.Peer("unix", 11, "/run/postgresql/.s.PGSQL.5432")


def test_the_first_wait_on_a_key_counts_and_a_repeat_with_no_work_between_is_a_listeners_cadence():
    m = job_wait.Memory()
    owner = ("42", 100.0)
    w = m.begin(owner, PG, start=10.0)
    assert w.counted
    m.end(w, now=15.0)  # answered nothing after 5 s; the worker asks again at once
    again = m.begin(owner, PG, start=15.1)
    assert not again.counted
    m.note_work([owner], now=16.0)  # it did work with what came back: the next wait is a first one
    assert m.begin(owner, PG, start=17.0).counted


def test_a_short_block_is_no_wait_to_repeat_and_a_long_silence_makes_the_next_wait_count_again():
    m = job_wait.Memory()
    owner = ("42", 100.0)
    m.end(m.begin(owner, PG, start=10.0), now=11.0)  # shorter than WAIT_MIN: not a wait anyone repeats
    assert m.begin(owner, PG, start=11.5).counted
    m.end(m.begin(owner, PG, start=20.0), now=30.0)
    assert m.begin(owner, PG, start=30.0 + job_wait.RETURN_GAP + 1).counted


def test_a_wait_looked_at_again_after_its_parent_ran_is_the_same_wait_not_a_listener_asking_again():
    """`make -j` or `a & b; wait`: one step ends, the shell runs, and every other step's wait is ended and looked at
    again. That look's wait began before the end was noted: it is the same block, and counts as it did."""
    m = job_wait.Memory()
    owner = ("42", 100.0)
    w = m.begin(owner, PG, start=10.0)
    m.end(w, now=15.0)  # the parent ran: a sibling ended
    assert m.begin(owner, PG, start=10.0).counted  # the same block, its start as before


def test_a_tcp_key_the_connection_rule_saw_repeat_is_not_counted():
    m = job_wait.Memory()
    assert not m.begin(("7", 1.0), job_wait.Peer("tcp", 5, "10.0.0.5", 6379), 3.0, tcp_heartbeat=True).counted


def _answer(seq, ino, peer=0, name=b""):
    attrs = b""
    if peer:
        attrs += struct.pack("=HHI", 8, unix_diag.UNIX_DIAG_PEER, peer)
    if name:
        rta = struct.pack("=HH", 4 + len(name), unix_diag.UNIX_DIAG_NAME) + name
        attrs += rta + b"\0" * (-len(rta) % 4)
    body = struct.pack("=BBBxIII", socket.AF_UNIX, 1, 1, ino, 0, 0) + attrs
    return struct.pack("=IHHII", 16 + len(body), unix_diag.SOCK_DIAG_BY_FAMILY, 0, seq, 0) + body


def test_unix_diag_answers_are_read_for_peer_and_name_and_a_missing_socket_is_none():
    s = unix_diag.parse(_answer(3, 77, peer=78, name=b"/tmp/db.sock"), seq=3)
    assert (s.ino, s.type, s.state, s.peer, s.name) == (77, 1, 1, 78, "/tmp/db.sock")
    assert unix_diag.parse(_answer(4, 9, name=b"\0abstract"), seq=4).name == "@abstract"
    err = struct.pack("=IHHII", 36, unix_diag.NLMSG_ERROR, 0, 5, 0) + struct.pack("=i", -2) + b"\0" * 16
    assert unix_diag.parse(err, seq=5) is None
    with pytest.raises(ValueError):  # a length past the end of what came
        unix_diag.parse(struct.pack("=IHHII", 99, unix_diag.SOCK_DIAG_BY_FAMILY, 0, 6, 0), seq=6)


@contextlib.contextmanager
def _step_waiting_on_a_server(tmp_path):
    """(reader, parent, child pid, server's accepted connection, path): a child blocked on its connection to a Unix
    server, its parent waiting for it (wait()), stdin not a terminal. Cleaned up by PID."""
    reader = unix_diag.open_reader()
    if reader is None:
        pytest.skip("no unix_diag here")
    path = str(tmp_path / "srv.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen()
    client = ("import socket, sys\ns = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'q')\n"
              "s.recv(1)\n")
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])",
                               sys.executable, "-c", client, path], stdin=subprocess.DEVNULL)
    try:
        conn, _ = srv.accept()
        conn.recv(1)
        deadline = time.monotonic() + 10
        child = None
        while child is None and time.monotonic() < deadline:
            with open(f"/proc/{parent.pid}/task/{parent.pid}/children") as f:
                kids = f.read().split()
            child = kids[0] if kids else None
            time.sleep(0.05)
        assert child is not None
        time.sleep(0.3)
        yield reader, parent, child, conn, path
        conn.sendall(b"a")
        parent.wait(timeout=10)
    finally:
        parent.kill()
        parent.wait(timeout=10)
        srv.close()
        reader.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and unix_diag are Linux's")
def test_a_child_blocked_on_its_connection_to_a_server_while_its_parent_waits_is_found(tmp_path):
    with _step_waiting_on_a_server(tmp_path) as (reader, parent, child, _conn, path):
        def wchan(pid):
            with open(f"/proc/{pid}/wchan") as f:
                return f.read().strip()

        peers = job_wait.find_peers("/proc", child, str(parent.pid), {}, frozenset(), reader, wchan)
        assert [(p.kind, p.peer) for p in peers] == [("unix", path)]
        # With its parent not waiting for it (in an event loop), the same process is no job step.
        assert job_wait.find_peers("/proc", child, str(parent.pid), {}, frozenset(), reader,
                                   lambda pid: "do_epoll_wait") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_parent_reads_its_childs_output_pipe_but_sharing_its_own_output_with_the_child_is_not_reading_it():
    out = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], stdout=subprocess.PIPE)
    try:
        pipe = os.readlink(f"/proc/{out.pid}/fd/1")
        assert pipe.startswith("pipe:[")
        assert job_wait.reads_pipe("/proc", str(os.getpid()), pipe)  # we hold its read end (stdout=PIPE)
        assert not job_wait.reads_pipe("/proc", str(out.pid), pipe)  # the child holds the write end only
    finally:
        out.kill()
        out.wait(timeout=10)


class _Track:
    def __init__(self, peer, pport):
        from wr_agent import tcp_rule
        self.inbound, self.state, self.peer, self.pport = False, tcp_rule.ESTABLISHED, peer, pport


def _fake_proc(root, pid, argv, fds, tty_nr=0):
    d = root / str(pid)
    (d / "fd").mkdir(parents=True)
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (d / "stat").write_text(f"{pid} ({argv[0]}) S 1 {pid} {pid} {tty_nr} -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100\n")
    for n, target in enumerate(fds):
        os.symlink(target, d / "fd" / str(n))


def test_an_ssh_remote_command_is_waited_on_by_its_exit_with_no_parent_waiting(tmp_path):
    """rsync polls its ssh over a socketpair and never wait()s for it: an ssh whose arguments run a remote command
    is a wait answered by its exit, with or without a parent that waits. A tunnel (-N) still needs one, and has
    none here."""
    _fake_proc(tmp_path, 70, ["ssh", "-l", "u", "host", "rsync", "--server", "."],
               ["socket:[900]", "socket:[901]", "/dev/null", "socket:[55]"])
    _fake_proc(tmp_path, 71, ["ssh", "-N", "-L", "8080:localhost:80", "host"],
               ["/dev/null", "/dev/null", "/dev/null", "socket:[56]"])
    tracks = {55: _Track("10.0.0.9", 22), 56: _Track("10.0.0.9", 22)}

    def busy_parent(pid):
        return "do_select"  # rsync, polling

    peers = job_wait.find_peers(str(tmp_path), "70", "60", tracks, frozenset(), None, busy_parent, comm="ssh")
    assert [(p.kind, p.peer, p.port, p.exit, p.sure()) for p in peers] == [("tcp", "10.0.0.9", 22, True, True)]
    assert job_wait.find_peers(str(tmp_path), "71", "60", tracks, frozenset(), None, busy_parent, comm="ssh") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and unix_diag are Linux's")
def test_a_unix_peer_counts_by_whose_turn_it_is(tmp_path):
    """The same step on the same connection: the server waiting to read it (a LISTEN, a SUBSCRIBE) is no wait of
    the job's; the server holding the request is one, sure of itself (no cadence makes it a listener's); not known,
    the rule before it (the first wait counts, stdin not a person's terminal)."""
    from wr_agent import peer_turn

    with _step_waiting_on_a_server(tmp_path) as (reader, parent, child, conn, path):
        server_end = os.fstat(conn.fileno()).st_ino

        def find(turn):
            asked = []

            def server_turn(inode):
                asked.append(inode)
                return turn
            peers = job_wait.find_peers("/proc", child, str(parent.pid), {}, frozenset(), reader,
                                        lambda pid: "do_wait", server_turn, comm="python3")
            assert asked == [server_end]
            return [(p.peer, p.turn, p.sure()) for p in peers]

        assert find(peer_turn.CLIENT) == []
        assert find(peer_turn.SERVER) == [(path, peer_turn.SERVER, True)]
        assert find(None) == [(path, None, False)]
