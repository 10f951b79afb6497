"""The app's own SSH connections are never the box's network work (wr_agent/own_flows.py): a new SSH flow's bytes
wait for a claim; claimed, they are ours from the first byte; unclaimed, they count late."""

import pytest
from wr_agent.own_flows import DEFER_SECONDS, OwnFlows, parse_ssh_connection, ssh_connection_of, wire_bytes
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


def forward(inode, payload, lport=41000):
    """The sshd end of a forwarded connection, within the box (ssh -L to a server here)."""
    return Conn(2, ESTABLISHED, "127.0.0.1", lport, "127.0.0.1", 8080, inode, bytes_out=payload // 2,
                bytes_in=payload - payload // 2)


def test_a_persons_tunnel_moves_no_net_bytes_that_its_forwarded_connection_moved(tmp_path):
    """`ssh -L` to an editor's server here: the person's SSH flow carries the editor's chatter, which the connection
    rule judges on the forwarded connection (the sshd session process holds both sockets). Those bytes are held;
    what the flow moved beyond them (the shell, an scp) still counts; another process's sockets are not its."""
    proc = tmp_path / "proc"
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock, proc=str(proc))
    flow = ssh(50010, 10000)  # inode 51010
    _sshd(proc, 700, [51010, 9001])
    _sshd(proc, 701, [9002], comm="python3")  # the editor's server: the other end, not the session's
    reader.conns = [flow, forward(9001, 1000), forward(9002, 1000, lport=8080)]
    flows.account(wire_bytes(10000))
    clock.t += DEFER_SECONDS  # a person's: released, its later bytes count
    reader.conns = [ssh(50010, 12000), forward(9001, 3000), forward(9002, 3000, lport=8080)]
    held, released = flows.account(wire_bytes(2000))
    assert held == wire_bytes(2000)  # all of this tick's 2000 B were the forward's (3000 - 1000)
    assert released == wire_bytes(10000) - wire_bytes(1000)  # its first bytes count late, less the forward's
    clock.t += 1
    reader.conns = [ssh(50010, 15000), forward(9001, 3500), forward(9002, 3500, lport=8080)]
    held, _ = flows.account(wire_bytes(3000))
    assert held == wire_bytes(500)  # 500 B forwarded; the other 2500 B (the shell, a copy) count
    clock.t += 1
    _sshd(proc, 700, [51010])  # the forward closed
    reader.conns = [ssh(50010, 16000)]
    assert flows.account(wire_bytes(1000)) == (0, 0)


def test_a_flow_no_sshd_of_this_user_holds_counts_whole(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    reader, clock = Reader(), Clock()
    flows = OwnFlows(reader, clock, proc=str(proc))
    reader.conns = [ssh(50011, 4000), forward(9003, 4000)]
    flows.account(wire_bytes(4000))
    clock.t += DEFER_SECONDS
    reader.conns = [ssh(50011, 6000), forward(9003, 6000)]
    assert flows.account(wire_bytes(2000)) == (wire_bytes(2000), wire_bytes(4000) + wire_bytes(2000))
    clock.t += 1
    reader.conns = [ssh(50011, 7000), forward(9003, 7000)]
    assert flows.account(wire_bytes(1000)) == (0, 0)  # not known to be a tunnel: its bytes count
