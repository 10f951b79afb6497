"""The app's own SSH connections are never the box's network work (wr_agent/own_flows.py): a new SSH flow's bytes
wait for a claim; claimed, they are ours from the first byte; unclaimed, they count late."""

import pytest
from wr_agent.own_flows import (
    DEFER_SECONDS,
    FRAMING,
    WALK_EVERY,
    OwnFlows,
    parse_ssh_connection,
    ssh_connection_of,
    wire_bytes,
)
from wr_agent.tcp_diag import ESTABLISHED, LISTEN, Conn

pytestmark = pytest.mark.unit


class Reader:
    def __init__(self):
        self.conns = []
        self.reads = 0

    def read(self):
        self.reads += 1
        return list(self.conns)


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def ssh(client_port, payload, *, peer="10.0.0.9", local="10.0.0.2", lport=22, state=ESTABLISHED):
    return Conn(2, state, local, lport, peer, client_port, 1000 + client_port, bytes_out=payload // 2,
                bytes_in=payload - payload // 2)


def test_ssh_connection_is_read_as_this_boxs_sshd_saw_it():
    assert parse_ssh_connection("10.0.0.9 52344 10.0.0.2 22") == ("10.0.0.9", 52344, "10.0.0.2", 22)
    assert parse_ssh_connection("::ffff:10.0.0.9 52344 ::ffff:10.0.0.2 2222") == ("10.0.0.9", 52344, "10.0.0.2",
                                                                                   2222)
    for bad in ("", "1 2 3", "a b c d", "10.0.0.9 0 10.0.0.2 22", "10.0.0.9 70000 10.0.0.2 22", None):
        assert parse_ssh_connection(bad) is None


def test_a_claimed_flow_is_ours_from_its_first_byte_to_its_last():
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock)
    reader.conns = [ssh(50000, 8000)]  # the login: 8 KB before any of our code ran on the box
    held, released = flows.account(wire_bytes(8000))
    assert held == wire_bytes(8000) and released == 0  # waiting for a claim: it does not vote
    flows.claim(("10.0.0.9", 50000, "10.0.0.2", 22))  # the relay subscribed through it
    clock.t += 1
    reader.conns = [ssh(50000, 20000)]
    assert flows.account(wire_bytes(12000)) == (wire_bytes(12000), 0)
    clock.t += DEFER_SECONDS + 1
    reader.conns = []  # it ended
    assert flows.account(200) == (0, 0)  # nothing released: it was ours
    assert not flows.flows


def test_an_unclaimed_flow_counts_late_a_persons_ssh_is_work():
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock)
    reader.conns = [ssh(50001, 6000)]
    assert flows.account(wire_bytes(6000)) == (wire_bytes(6000), 0)
    clock.t += DEFER_SECONDS
    reader.conns = [ssh(50001, 9000)]
    held, released = flows.account(wire_bytes(3000))
    assert released == wire_bytes(6000) + wire_bytes(3000) and held == wire_bytes(3000)  # all of it, late
    clock.t += 1
    reader.conns = [ssh(50001, 10000)]
    assert flows.account(wire_bytes(1000)) == (0, 0)  # from now on its bytes count as they move


def test_a_stream_straight_to_the_socket_claims_the_newest_fresh_flow():
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock)
    reader.conns = [ssh(50002, 4000)]  # a person's session, older
    flows.account(100)
    clock.t += 2
    reader.conns = [ssh(50002, 4100), ssh(50003, 7000)]  # the app's login, just now
    flows.claim_recent()
    flows.account(100)
    assert flows.flows[("10.0.0.9", 50003, "10.0.0.2", 22)].claimed
    assert not flows.flows[("10.0.0.9", 50002, "10.0.0.2", 22)].claimed


def test_other_services_listeners_and_loopback_are_not_ssh_flows():
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock)
    reader.conns = [ssh(50004, 5000, lport=5432), ssh(0, 0, state=LISTEN), ssh(50005, 5000, local="127.0.0.1")]
    assert flows.account(5000) == (0, 0) and not flows.flows


def test_an_idle_link_reads_nothing():
    reader = Reader()
    flows = OwnFlows(reader, Clock())
    assert flows.account(0) == (0, 0) and reader.reads == 0


def test_the_relays_ssh_connection_is_read_from_its_environment(tmp_path):
    proc = tmp_path / "proc" / "4242"
    proc.mkdir(parents=True)
    (proc / "environ").write_bytes(b"HOME=/h\0SSH_CONNECTION=10.0.0.9 50006 10.0.0.2 22\0PATH=/bin\0")
    assert ssh_connection_of(4242, proc=str(tmp_path / "proc")) == ("10.0.0.9", 50006, "10.0.0.2", 22)
    assert ssh_connection_of(4243, proc=str(tmp_path / "proc")) is None


def _sshd(proc, pid, inodes, comm="sshd"):
    """A process in a fake /proc holding these sockets (its fd links)."""
    d = proc / str(pid)
    (d / "fd").mkdir(parents=True, exist_ok=True)
    (d / "comm").write_text(comm + "\n")
    for fd in list((d / "fd").iterdir()):
        fd.unlink()
    for n, ino in enumerate(inodes):
        (d / "fd" / str(n + 3)).symlink_to(f"socket:[{ino}]")


ME = 1000  # this user's uid, as the agent's flows are told it


def forward(inode, payload, lport=41000, uid=ME):
    """An end of a forwarded connection, within the box (ssh -L to a server here), a socket of user `uid`."""
    return Conn(2, ESTABLISHED, "127.0.0.1", lport, "127.0.0.1", 8080, inode, uid=uid, bytes_out=payload // 2,
                bytes_in=payload - payload // 2)


def framed(payload):
    return int(wire_bytes(payload) * FRAMING)


def test_a_persons_tunnel_moves_no_net_bytes_that_its_forwarded_connection_moved(tmp_path):
    """`ssh -L` to an editor's server here: the person's SSH flow carries the editor's chatter, which the connection
    rule judges on the forwarded connection (here an sshd process whose descriptors can be read holds its end).
    Those bytes and their framing are held; what the flow moved beyond them (the shell, an scp) still counts;
    another process's sockets (the editor's end) are not the forward's a second time."""
    proc = tmp_path / "proc"
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock, proc=str(proc), uid=ME)
    flow = ssh(50010, 10000)  # inode 51010
    _sshd(proc, 700, [51010, 9001])
    _sshd(proc, 701, [9002], comm="python3")  # the editor's server: the other end, not the session's
    reader.conns = [flow, forward(9001, 1000), forward(9002, 1000, lport=8080)]
    flows.account(wire_bytes(10000))
    clock.t += DEFER_SECONDS  # a person's: released, its later bytes count
    reader.conns = [ssh(50010, 12000), forward(9001, 3000), forward(9002, 3000, lport=8080)]
    held, released = flows.account(wire_bytes(2000))
    assert held == wire_bytes(2000)  # all of this tick's 2000 B were the forward's (3000 - 1000)
    assert released == wire_bytes(10000) - framed(1000)  # its first bytes count late, less the forward's
    clock.t += 1
    reader.conns = [ssh(50010, 15000), forward(9001, 3500), forward(9002, 3500, lport=8080)]
    held, _ = flows.account(wire_bytes(3000))
    assert held == framed(500)  # 500 B forwarded (and its framing); the rest (the shell, a copy) counts
    clock.t += 1
    _sshd(proc, 700, [51010])  # the forward closed
    reader.conns = [ssh(50010, 16000)]
    assert flows.account(wire_bytes(1000)) == (0, 0)


def test_an_end_no_readable_process_holds_is_the_forward_as_openssh_hides_its_session(tmp_path):
    """OpenSSH's session process runs as the person but is not dumpable: its descriptors are root's to read, so
    its end of the forward is a loopback socket of this user's that no readable process holds. That is the
    forward; the server's end (a process of this user's in the open) is not counted a second time."""
    proc = tmp_path / "proc"
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock, proc=str(proc), uid=ME)
    _sshd(proc, 700, [], comm="sshd")  # the session: its fd links cannot be read (as if not dumpable)
    (proc / "700" / "fd").chmod(0)
    _sshd(proc, 701, [9102], comm="python3")  # the editor's server
    reader.conns = [ssh(50020, 500), forward(9101, 0), forward(9102, 0, lport=8080)]
    flows.account(wire_bytes(500))
    clock.t += DEFER_SECONDS
    reader.conns = [ssh(50020, 3600), forward(9101, 3000), forward(9102, 3000, lport=8080)]
    held, released = flows.account(wire_bytes(3100))
    assert held == wire_bytes(3100)  # the chatter and its framing: judged on the forwarded connection
    assert released == wire_bytes(500)  # the login's bytes: a person's ssh, late
    clock.t += 1
    reader.conns = [ssh(50020, 13600), forward(9101, 3500), forward(9102, 3500, lport=8080)]
    held, _ = flows.account(wire_bytes(10000))
    assert held == framed(500)  # a copy beside the tunnel counts


def test_a_loopback_end_in_the_open_or_another_users_is_not_a_forward(tmp_path):
    """A loopback connection of a process of this user's whose descriptors can be read (a test client and its
    server), or another user's socket (a database's), is not a tunnel: a person's flow moving in the same seconds
    counts whole. The holders are looked for once per WALK_EVERY at most."""
    proc = tmp_path / "proc"
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock, proc=str(proc), uid=ME)
    _sshd(proc, 701, [9003], comm="python3")
    reader.conns = [ssh(50011, 4000), forward(9003, 4000), forward(9004, 4000, uid=ME + 1)]
    flows.account(wire_bytes(4000))
    clock.t += DEFER_SECONDS
    reader.conns = [ssh(50011, 6000), forward(9003, 6000), forward(9004, 6000, uid=ME + 1)]
    # not yet released on this tick: held, then released with what it moved while it waited, all of it
    assert flows.account(wire_bytes(2000)) == (wire_bytes(2000), wire_bytes(4000) + wire_bytes(2000))
    clock.t += 1
    reader.conns = [ssh(50011, 7000), forward(9003, 7000), forward(9004, 7000, uid=ME + 1)]
    assert flows.account(wire_bytes(1000)) == (0, 0)  # released: its bytes count, no forward moved
    clock.t += 1
    _sshd(proc, 701, [])  # an end appears that nobody readable holds: a forward
    reader.conns = [ssh(50011, 8000), forward(9005, 1000)]
    assert flows.account(wire_bytes(1000)) == (wire_bytes(1000), 0)
    clock.t += 1  # another, within WALK_EVERY of the last walk: not looked for yet, so it counts
    reader.conns = [ssh(50011, 9000), forward(9005, 1000), forward(9006, 1000)]
    assert flows.account(wire_bytes(1000)) == (0, 0)
    clock.t += WALK_EVERY
    reader.conns = [ssh(50011, 10000), forward(9005, 1000), forward(9006, 2000)]
    assert flows.account(wire_bytes(1000)) == (wire_bytes(1000), 0)
