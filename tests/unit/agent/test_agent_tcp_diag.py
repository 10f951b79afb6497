"""tcp_diag's parsers on replies captured from a real kernel (data/capture_tcp_diag.py, which says how and
what), and on malformed input. The captured scenario, on loopback in a fresh network namespace:
IPv4 "hello" answered by "world!", "QUERY\\n" not answered; IPv6 a sender whose peer does not read, a client
that never sent."""

import json
import socket
import struct
from pathlib import Path

import pytest
from wr_agent import tcp_diag

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data"
SCENARIO = json.loads((DATA / "scenario.json").read_text())


def captured(name):
    conns, done = tcp_diag.parse((DATA / name).read_bytes())
    assert done, "the capture ends with the dump's NLMSG_DONE"
    return conns


def by_ports(conns, lport, pport):
    (c,) = [c for c in conns if (c.lport, c.pport) == (lport, pport)]
    return c


def test_ipv4_reply_gives_each_socket_with_its_tcp_info():
    conns = captured("sock_diag_inet.bin")
    listen = SCENARIO["listen4"]
    assert [c.lport for c in conns if c.state == tcp_diag.LISTEN] == [listen]
    answered = by_ports(conns, SCENARIO["answered_client"], listen)
    assert (answered.family, answered.local, answered.peer) == (socket.AF_INET, "127.0.0.1", "127.0.0.1")
    assert answered.state == tcp_diag.ESTABLISHED
    assert answered.inode == SCENARIO["inodes"]["answered_client"]
    assert answered.uid == SCENARIO["uid"]
    # sent "hello", got "world!": both ways carried data, the answer within the same millisecond tick
    assert answered.bytes_in == 6 and answered.bytes_out >= 5
    assert answered.sent_ago is not None and answered.recv_ago is not None
    assert answered.recv_ago <= answered.sent_ago
    assert 1000 <= answered.sent_ago < 60000  # the capture waited 1.2 s after the exchange
    unanswered = by_ports(conns, SCENARIO["unanswered_client"], listen)
    assert unanswered.recv_ago is None, "nothing ever came back: no receive time, not the connection's age"
    assert unanswered.sent_ago >= 1000 and unanswered.bytes_in == 0
    server = by_ports(conns, listen, SCENARIO["unanswered_client"])
    assert server.inode == SCENARIO["inodes"]["unanswered_server"]
    assert server.sent_ago is None and server.recv_ago >= 1000 and server.bytes_in == 6
    assert all(c.notsent == 0 and c.wqueue == 0 for c in conns if c.state == tcp_diag.ESTABLISHED)


def test_ipv6_reply_gives_addresses_queues_and_a_peer_that_never_sent():
    conns = captured("sock_diag_inet6.bin")
    listen = SCENARIO["listen6"]
    assert all(c.family == socket.AF_INET6 and c.local == "::1" for c in conns)
    queued = by_ports(conns, listen, SCENARIO["queued_server_peer"])
    assert queued.notsent > 0 and queued.wqueue >= queued.notsent
    assert queued.bytes_out + queued.wqueue == SCENARIO["queued_bytes"]
    assert queued.timer == 4, "a peer with a closed window: the zero-window probe timer"
    reader = by_ports(conns, SCENARIO["queued_server_peer"], listen)
    assert reader.rqueue > 0 and reader.bytes_in == reader.rqueue and reader.sent_ago is None
    silent = by_ports(conns, SCENARIO["silent_client"], listen)
    assert silent.sent_ago is None and silent.recv_ago is None and silent.bytes_in == 0


def test_fallback_tables_give_the_same_sockets_with_queues_and_timers_only():
    for name, family, capture in (("proc_net_tcp.txt", socket.AF_INET, "sock_diag_inet.bin"),
                                  ("proc_net_tcp6.txt", socket.AF_INET6, "sock_diag_inet6.bin")):
        table = tcp_diag.parse_proc_net_tcp((DATA / name).read_text(), family)
        rich = captured(capture)
        key = lambda c: (c.local, c.lport, c.peer, c.pport, c.state, c.inode)  # noqa: E731
        assert sorted(map(key, table)) == sorted(map(key, rich))
        assert all(c.sent_ago is None and c.bytes_in is None and c.notsent is None for c in table)
    table6 = tcp_diag.parse_proc_net_tcp((DATA / "proc_net_tcp6.txt").read_text(), socket.AF_INET6)
    queued = by_ports(table6, SCENARIO["listen6"], SCENARIO["queued_server_peer"])
    assert queued.wqueue > 0 and queued.timer == 4
    assert by_ports(table6, SCENARIO["queued_server_peer"], SCENARIO["listen6"]).rqueue > 0


def test_fallback_skips_other_states_and_malformed_lines():
    text = (" sl local rem st\n"
            "   0: 0100007F:1F90 0100007F:C350 06 00000000:00000000 00:00000000 00000000 0 0 11 1\n"  # TIME_WAIT
            "   1: garbage\n"
            "   2: 0100007F:1F90 0100007F:ZZZZ 01 00000000:00000000 00:00000000 00000000 0 0 12 1\n"
            "   3: 0100007F:1F90 0100007F:C350 01 00000010:00000000 01:00000020 00000000 1000 0 13 1\n")
    (c,) = tcp_diag.parse_proc_net_tcp(text, socket.AF_INET)
    assert (c.local, c.lport, c.pport, c.wqueue, c.timer, c.uid, c.inode) == ("127.0.0.1", 8080, 50000, 16, 1,
                                                                              1000, 13)


def test_request_is_an_inet_diag_req_v2_dump_with_tcp_info():
    raw = tcp_diag.request(socket.AF_INET6, 7)
    length, kind, flags, seq, pid = struct.unpack_from("=IHHII", raw)
    assert (length, kind, flags, seq, pid) == (len(raw), 20, 0x301, 7, 0) and len(raw) == 16 + 56
    family, proto, ext, _pad, states = struct.unpack_from("=BBBBI", raw, 16)
    assert (family, proto, ext) == (socket.AF_INET6, socket.IPPROTO_TCP, 1 << 1)
    assert states == (1 << 1) | (1 << 8) | (1 << 10)  # ESTABLISHED, CLOSE_WAIT, LISTEN
    assert raw[24:] == b"\0" * 48  # any socket


def test_an_exact_lookup_asks_for_the_one_socket_a_dump_named():
    conns = captured("sock_diag_inet.bin")
    c = by_ports(conns, SCENARIO["answered_client"], SCENARIO["listen4"])
    assert len(c.sockid) == 48 and struct.unpack("!H", c.sockid[:2])[0] == c.lport
    assert c.segs_out >= 2 and c.segs_in >= 2  # the handshake's and the exchange's segments
    raw = tcp_diag.request(socket.AF_INET, 8, c.sockid)
    _length, _kind, flags, _seq, _pid = struct.unpack_from("=IHHII", raw)
    assert flags == 0x1 and raw[24:] == c.sockid  # a request, not a dump: the socket's own id


def test_a_short_tcp_info_leaves_what_it_lacks_unknown():
    """An older kernel's tcp_info ends before bytes_acked (Linux < 4.1) or the data segment counts (< 4.6)."""
    raw = bytearray((DATA / "sock_diag_inet.bin").read_bytes())
    conns = tcp_diag.parse(bytes(raw))[0]
    first_est = next(i for i, c in enumerate(conns) if c.state == tcp_diag.ESTABLISHED)
    # Walk to that message and cut its INET_DIAG_INFO attribute to 104 bytes (through tcpi_total_retrans).
    off = 0
    for _ in range(first_est):
        off += (struct.unpack_from("=I", raw, off)[0] + 3) & ~3
    msg_len = struct.unpack_from("=I", raw, off)[0]
    a = off + 16 + 72
    while a < off + msg_len:
        rlen, rtype = struct.unpack_from("=HH", raw, a)
        if rtype == tcp_diag.INET_DIAG_INFO:
            struct.pack_into("=H", raw, a, 4 + 104)
            break
        a += (rlen + 3) & ~3
    c = tcp_diag.parse(bytes(raw))[0][first_est]
    assert c.bytes_in is None and c.bytes_out is None and c.notsent is None
    assert c.sent_ago is not None and c.recv_ago is not None  # no segment counts: the times as they came


def test_errors_and_truncation():
    err = struct.pack("=IHHII", 36, tcp_diag.NLMSG_ERROR, 0, 5, 0) + struct.pack("=i", -13) + b"\0" * 16
    with pytest.raises(OSError) as info:
        tcp_diag.parse(err, 5)
    assert info.value.errno == 13
    assert tcp_diag.parse(err, 6) == ([], False), "an answer to another request is skipped"
    whole = (DATA / "sock_diag_inet.bin").read_bytes()
    with pytest.raises(ValueError):
        tcp_diag.parse(whole[:100])
    conns, done = tcp_diag.parse(whole[:0])
    assert (conns, done) == ([], False)
