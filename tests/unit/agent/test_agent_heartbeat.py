"""Heartbeat: default-gateway parsing from /proc/net/route, and real sends to a loopback UDP socket."""

import socket

import pytest
from wr_agent.heartbeat import Heartbeat, default_gateway, parse_target

pytestmark = pytest.mark.unit

HEADER = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"


def route_file(tmp_path, rows):
    p = tmp_path / "route"
    p.write_text(HEADER + "".join("\t".join([*map(str, r[:4]), "0", "0", str(r[4]), r[5], "0", "0", "0"]) + "\n"
                                   for r in rows))
    return str(p)


def test_lowest_metric_up_gateway_route(tmp_path):
    path = route_file(tmp_path, [
        ("eth0", "00000000", "010200C0", "0003", 100, "00000000"),  # 192.0.2.1 metric 100
        ("eth1", "00000000", "0101A8C0", "0003", 50, "00000000"),   # 192.168.1.1 metric 50
        ("eth2", "00000000", "0102A8C0", "0002", 1, "00000000"),    # not RTF_UP
        ("eth3", "0002A8C0", "0103A8C0", "0003", 0, "00FFFFFF"),    # not a default route
    ])
    assert default_gateway(path) == "192.168.1.1"


def test_no_default_route(tmp_path):
    assert default_gateway(route_file(tmp_path, [("eth0", "000200C0", "00000000", "0001", 0, "00FFFFFF")])) is None
    assert default_gateway(str(tmp_path / "missing")) is None


def test_no_route_is_reported_and_retried(tmp_path):
    hb = Heartbeat(interval=60, route_path=str(tmp_path / "missing"))
    hb.tick(0.0, True)
    assert hb.error.startswith("no IPv4 default route") and hb.last_sent is None
    assert hb.next_due <= 1.0


def test_parse_target():
    assert parse_target("10.0.0.1:9") == ("10.0.0.1", 9)
    for bad in ("nohost", ":9", "h:x", "h:70000"):
        with pytest.raises(ValueError):
            parse_target(bad)


def test_sends_at_once_then_every_interval_only_while_busy():
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.5)
    hb = Heartbeat(interval=10, target=("127.0.0.1", rx.getsockname()[1]))
    try:
        hb.tick(0.0, True)
        assert rx.recv(16) == b"\x00" and hb.last_sent == 0.0 and hb.error is None
        hb.tick(5.0, True)
        hb.tick(10.0, True)
        assert rx.recv(16) == b"\x00" and hb.sent == 2
        hb.tick(11.0, False)  # idle: nothing, and the next BUSY sends at once
        hb.tick(12.0, True)
        assert hb.sent == 3
        rx.setblocking(False)
        rx.recv(16)
        with pytest.raises(BlockingIOError):
            rx.recv(16)
    finally:
        hb.close()
        rx.close()


def test_disabled_sends_nothing():
    hb = Heartbeat(enabled=False, target=("127.0.0.1", 9))
    hb.tick(0.0, True)
    assert hb.sent == 0 and hb.last_sent is None


def test_a_slow_name_lookup_for_the_target_does_not_hold_up_the_agent(monkeypatch):
    """A heartbeat target given by name is looked up at each send; a DNS server that never answers (here a
    getaddrinfo that waits on an event: no DNS server may be asked from a test) must not hold the agent's lock,
    or every client and the health endpoint wait as long as the lookup."""
    import threading

    from agentfake import FakeSampler
    from wr_agent.agent import Agent
    from wr_agent.settings import Settings
    from wr_agent.signals import Signals

    looking_up, answer = threading.Event(), threading.Event()

    def slow_getaddrinfo(*args, **kw):
        looking_up.set()
        answer.wait(10)
        raise socket.gaierror("no answer")

    monkeypatch.setattr(socket, "getaddrinfo", slow_getaddrinfo)
    sampler = FakeSampler()
    sampler.sig = Signals(cpu=[("make", "5", 1.0)])
    agent = Agent(sampler, Settings(14400, 600, False), Heartbeat(target=("gw.example", 9)), "w1", "b" * 64,
                  hold_seconds=0, tick_seconds=1)
    ticking = threading.Thread(target=agent.tick, daemon=True)
    ticking.start()
    try:
        assert looking_up.wait(5), "the busy tick never sent a heartbeat"
        answered = []
        asking = threading.Thread(target=lambda: answered.append(agent.status()), daemon=True)
        asking.start()
        asking.join(2)
        assert answered, "status waited on the heartbeat's name lookup"
        assert answered[0]["verdict"] == "BUSY"
    finally:
        answer.set()
        ticking.join(5)
