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
