"""The connection rule (tcp_rule.Judge) on a fake clock: each shape a connection takes in the truth suite,
driven as the kernel would report it (times since the last data each way, cumulative byte counters)."""

import socket

import pytest
from wr_agent import tcp_diag, tcp_rule
from wr_agent.tcp_diag import ESTABLISHED, LISTEN

pytestmark = pytest.mark.unit

OWNER = ("40", 123.0)


class Sock:
    """One socket as the kernel keeps it: last data sent/received (absolute), bytes acked/received."""

    def __init__(self, inode, lport=50000, peer="10.0.3.7", pport=5432, family=socket.AF_INET):
        self.inode, self.lport, self.peer, self.pport, self.family = inode, lport, peer, pport, family
        self.sent = self.recv = None
        self.out = self.inn = 0
        self.notsent = 0
        self.state = ESTABLISHED

    def send(self, t, n=100):
        self.sent, self.out = t, self.out + n
        return self

    def receive(self, t, n=100):
        self.recv, self.inn = t, self.inn + n
        return self

    def conn(self, now):
        ago = lambda t: None if t is None else round((now - t) * 1000)  # noqa: E731
        return tcp_diag.Conn(self.family, self.state, "10.200.0.2", self.lport, self.peer, self.pport,
                             self.inode, sent_ago=ago(self.sent), recv_ago=ago(self.recv), bytes_out=self.out,
                             bytes_in=self.inn, notsent=self.notsent, wqueue=self.notsent)


class World:
    def __init__(self, *socks, listening=()):
        self.socks = list(socks)
        self.listening = listening
        self.judge = tcp_rule.Judge()
        self.owners = {s.inode: OWNER for s in socks}

    def tick(self, now):
        conns = [s.conn(now) for s in self.socks]
        conns += [tcp_diag.Conn(socket.AF_INET, LISTEN, "0.0.0.0", p, "0.0.0.0", 0, 900 + p) for p in self.listening]
        self.judge.ingest(now, conns)
        return self.judge.busy(now, lambda ino: self.owners.get(ino, OWNER), 1_700_000_000.0 + now)

    def busy_seconds(self, start, end, step=1.0, each=None):
        out, t = [], start
        while t <= end:
            if each:
                each(t)
            if self.tick(t):
                out.append(t)
            t += step
        return out


def test_an_open_connection_after_its_exchange_is_not_work():
    s = Sock(1).send(0.0).receive(0.001)  # a browser's request answered, then an idle keep-alive
    w = World(s)
    assert w.busy_seconds(1.0, 300.0) == []


def test_a_connection_that_never_carried_data_is_not_work():
    w = World(Sock(1))  # silent_tcp: connected, nothing sent either way
    assert w.busy_seconds(0.0, 120.0) == []


def test_one_long_query_is_work_from_the_short_threshold_to_its_answer():
    s = Sock(1).send(0.0)
    w = World(s)
    busy = w.busy_seconds(0.0, 75.0)
    assert busy[0] == tcp_rule.WAIT_MIN and busy[-1] == 75.0 and len(busy) == 75 - 1
    s.receive(75.5, 60)
    assert w.tick(76.0), "its answer is still that query's"
    assert w.tick(75.5 + tcp_rule.ANSWER_GAP + 0.5) == []


def test_reason_names_the_connection_and_does_not_change_while_it_waits():
    s = Sock(1, peer="10.0.3.7", pport=5432).send(10.0)
    w = World(s)
    seen = set()
    for t in range(12, 60):
        ((_owner, track),) = w.tick(float(t))
        facts = tcp_rule.facts(track, track.busy_from)
        seen.add(tuple(sorted(facts.items())))
    (facts,) = seen
    assert dict(facts) == {"peer": "10.0.3.7", "port": 5432, "since": 10.0}  # when the wait began


def test_inbound_reason_says_the_local_port_and_ipv6_is_bracketed():
    s = Sock(1, lport=8080, peer="::1", pport=41000, family=socket.AF_INET6).receive(0.0)
    w = World(s, listening=(8080,))
    ((_owner, track),) = w.tick(5.0)
    facts = tcp_rule.facts(track, track.busy_from)
    assert facts["local_port"] == 8080 and facts["peer"] == "::1" and facts["port"] == 41000


def test_a_long_poll_answered_nothing_counts_once_even_when_it_reconnects():
    w = World()
    polls = []

    def poll(t):
        if t % 15 == 0:  # a new connection per poll, the same service; answered "[]" after 15 s
            n = len(polls)
            if polls:
                polls[-1].receive(t, 150)
                w.socks.remove(polls[-1])
            polls.append(Sock(100 + n, lport=40000 + n).send(t, 200))
            w.socks.append(polls[-1])

    busy = w.busy_seconds(0.0, 120.0, each=poll)
    assert busy and max(busy) <= 15.0 + tcp_rule.ANSWER_GAP, busy  # the first poll (and its answer) only


def test_a_long_poll_on_one_keep_alive_connection_is_a_heartbeat_after_the_first():
    s = Sock(1)
    w = World(s)

    def poll(t):
        if t % 20 == 0:
            if t:
                s.receive(t, 150)
            s.send(t + 0.01, 200)

    busy = w.busy_seconds(0.0, 200.0, each=poll)
    assert busy and max(busy) <= 20.0 + tcp_rule.ANSWER_GAP, busy  # the first poll and its answer only


def test_work_between_waits_makes_the_next_wait_a_first_one_again():
    s = Sock(1).send(0.0)
    w = World(s)
    assert w.tick(5.0)
    s.receive(10.0, 100).send(10.01)
    assert w.tick(10.5), "the answer to a counted wait is still that request's"
    assert w.tick(19.0) == [] and w.tick(19.5) == []  # returned to the same wait: a heartbeat
    w.judge.note_work({OWNER}, 16.0)  # CPU while it waits is not work between waits
    s.receive(20.0, 100)
    w.judge.note_work({OWNER}, 21.0)  # the process used CPU on what came back (that tick: no TCP vote)
    s.send(21.5)
    w.tick(22.0)
    assert w.tick(25.0), "after work, a new long wait counts"


def test_a_big_answer_is_work_between_waits():
    s = Sock(1).send(0.0)
    w = World(s)
    assert w.tick(5.0)
    s.receive(10.0, 64 * 1024).send(10.2)  # a result set, then the next query
    assert w.tick(10.5)
    assert w.tick(14.0), "the next query's wait is a first one: bytes moved between"


def test_a_wait_long_after_the_last_one_counts_again():
    s = Sock(1).send(0.0)
    w = World(s)
    w.tick(5.0)
    s.receive(10.0, 100)
    w.tick(11.0)
    s.send(11.0 + tcp_rule.RETURN_GAP + 30)  # a person at psql, back after a while, runs another query
    t = 11.0 + tcp_rule.RETURN_GAP + 30
    w.tick(t)
    assert w.tick(t + 5.0)


def test_a_streaming_answer_is_work_while_pieces_keep_coming():
    s = Sock(1).send(0.0, 2000)
    w = World(s)
    sizes = [3, 17, 5, 40, 9, 11]

    def stream(t):
        if t >= 60 and t <= 120 and t % 3 == 0:  # no bytes for 60 s, then a few every 3 s
            s.receive(t, sizes[int(t) % len(sizes)])

    busy = w.busy_seconds(0.0, 150.0, each=stream)
    assert [t for t in range(2, 121) if float(t) not in busy] == [], "busy from the wait to the last piece"
    assert max(busy) <= 120 + tcp_rule.ANSWER_GAP


def test_pings_answered_every_few_seconds_are_not_a_stream():
    s = Sock(1, lport=50100, peer="127.0.0.1", pport=9001)
    w = World(s)

    def ping(t):  # a notebook server's heartbeat: ping, echoed at once, every 3 s
        if t % 3 == 0:
            s.send(t, 40)
            s.receive(t + 0.002, 40)

    assert w.busy_seconds(0.0, 120.0, 0.5, each=ping) == []


def test_server_keepalives_further_apart_than_an_answers_pieces_are_not_a_stream():
    s = Sock(1).send(0.0, 300).receive(0.05, 2000)  # a --watch request and its first answer

    def keepalive(t):
        if t % 15 == 0 and t:
            s.receive(t, 20)

    assert World(s).busy_seconds(1.0, 180.0, each=keepalive) == []


def test_a_websocket_client_answering_pings_is_not_waiting():
    s = Sock(1, peer="127.0.0.1", pport=5173).send(0.0, 300).receive(0.01, 200)  # the upgrade

    def pinged(t):
        if t % 10 == 0 and t:
            s.receive(t, 6)
            s.send(t + 0.001, 6)  # the pong: this end "sent last" until the next ping

    assert World(s).busy_seconds(1.0, 300.0, each=pinged) == [], "a pong is a reply, not a request"


def test_bytes_moving_above_a_trickle_are_work_and_a_trickle_alone_is_not():
    fast, slow = Sock(1).send(0.0, 300), Sock(2, lport=50001).send(0.0, 300)
    w = World(fast)

    def move(t):
        fast.receive(t, 2000)  # 2 kB/s

    assert World(fast).busy_seconds(1.0, 30.0, each=move) == [float(t) for t in range(2, 31)]  # from the 2nd read
    w = World(slow)
    slow.send(0.0, 10).receive(0.01, 10)

    def trickle(t):
        if t % 12 == 0:
            slow.send(t, 100)  # a metrics line every 12 s, never answered
    busy = w.busy_seconds(1.0, 200.0, each=trickle)
    assert busy and max(busy) < 24.0, busy


def test_an_upload_behind_a_slow_receiver_is_work_until_the_peer_stops_taking():
    """Served to a client (inbound: no request of ours is outstanding), so only the queue counts."""
    s = Sock(1, lport=8000, peer="10.0.0.9", pport=40000).receive(0.0, 200).send(0.0, 65536)
    s.notsent = 400_000
    w = World(s, listening=(8000,))

    def drain(t):
        if t % 4 == 0 and t <= 40:
            s.out += 1024  # the receiver takes 1 kB every 4 s
            s.send(t, 0)

    busy = w.busy_seconds(1.0, 40.0, each=drain)
    assert busy[0] <= 2.0 and busy[-1] == 40.0 and len(busy) >= 39
    # The peer stops reading: a stuck peer is not an upload.
    late = w.busy_seconds(41.0, 41.0 + tcp_rule.QUEUE_STALL + 5)
    assert late and max(late) <= 40.0 + tcp_rule.QUEUE_STALL


def test_an_inbound_request_not_yet_answered_is_work_and_keep_alive_after_the_answer_is_not():
    s = Sock(1, lport=8080, peer="127.0.0.1", pport=40001).receive(0.0, 400)
    w = World(s, listening=(8080,))
    assert w.tick(1.0) == [] and w.tick(3.0)
    s.send(10.0, 5000)
    busy = w.busy_seconds(10.5, 200.0)
    assert max(busy, default=0.0) < 14.0, busy  # the answer (one burst: no flow), then an idle keep-alive


def test_a_ping_no_server_answers_after_a_page_load_is_a_clients_cadence_not_a_request():
    """A dev server's hot-reload websocket: the upgrade answered, then the browser's ping every 30 s, never
    answered; and a notebook's polls of a listing every 10 s, each answered with a big burst."""
    ws = Sock(1, lport=5173, peer="127.0.0.1", pport=40002).receive(0.0, 500).send(0.01, 300)
    w = World(ws, listening=(5173,))

    def ping(t):
        if t % 30 == 0 and t:
            ws.receive(t, 20)

    assert w.busy_seconds(1.0, 200.0, each=ping) == []
    poll = Sock(2, lport=8888, peer="127.0.0.1", pport=40003).receive(0.0, 400).send(0.02, 200)
    w = World(poll, listening=(8888,))

    def listing(t):
        if t % 10 == 0 and t:
            poll.receive(t, 600).send(t + 0.05, 90_000)

    assert w.busy_seconds(1.0, 200.0, each=listing) == []


def test_a_request_the_server_acts_on_counts_and_one_it_ignores_does_not():
    """After an answer, a client's next message within RETURN_GAP is a request only if the server does something
    with it: works (a CPU vote since it came) or sends on another of its connections (a notebook's kernel
    publishing "busy" on its iopub socket for the cell it runs). Work before it came is not about it."""
    s = Sock(1, lport=8080, peer="127.0.0.1", pport=40001).receive(0.0, 400).send(0.01, 300)
    w = World(s, listening=(8080,))
    assert w.busy_seconds(1.0, 20.0) == []
    w.judge.note_work(frozenset([OWNER]), 15.0)  # a build, done before the next message came
    s.receive(20.0, 400)
    assert w.busy_seconds(21.0, 30.0) == []  # nothing done with it: a ping
    s.send(30.5, 50)

    s2 = Sock(1, lport=8080, peer="127.0.0.1", pport=40001).receive(0.0, 400).send(0.01, 300)
    w = World(s2, listening=(8080,))
    w.tick(1.0)
    s2.receive(20.0, 400)
    w.judge.note_work(frozenset([OWNER]), 21.0)  # it computes for it
    assert w.busy_seconds(22.0, 30.0)

    shell = Sock(1, lport=8080, peer="127.0.0.1", pport=40001).receive(0.0, 400).send(0.01, 300)
    iopub = Sock(2, lport=8081, peer="127.0.0.1", pport=40002).receive(0.0, 40).send(0.02, 90)
    w = World(shell, iopub, listening=(8080, 8081))
    w.tick(1.0)
    shell.receive(20.0, 600)  # execute a cell: no answer on this connection until it ends
    iopub.send(20.05, 120)  # status: busy, on another of its connections
    assert w.busy_seconds(21.0, 30.0)


def test_work_the_server_did_before_a_ping_does_not_make_it_a_request():
    """A dev server on a loaded box: its hot-reload socket says "connected", then it spends seconds of CPU (the
    page's modules, its dependency scan) with no answer after it; the socket's ping 30 s later, which it ignores,
    is still the client's cadence (it counted as a request, never answered: busy for ever)."""
    ws = Sock(1, lport=5173, peer="127.0.0.1", pport=40002).receive(0.0, 500).send(0.01, 300)
    module = Sock(2, lport=5173, peer="127.0.0.1", pport=40003).receive(0.5, 400).send(6.0, 40_000)
    w = World(ws, module, listening=(5173,))
    w.tick(1.0)
    for t in (2.0, 3.0, 4.0, 5.0, 6.0):
        w.judge.note_work(frozenset([OWNER]), t)  # serving modules, slowly
    w.tick(7.0)
    ws.receive(30.0, 20)
    assert w.busy_seconds(31.0, 60.0) == []

    ws = Sock(1, lport=5173, peer="127.0.0.1", pport=40002).receive(0.0, 500).send(0.01, 300)
    module = Sock(2, lport=5173, peer="127.0.0.1", pport=40003).receive(0.5, 400).send(6.0, 40_000)
    w = World(ws, module, listening=(5173,))
    w.tick(7.0)
    w.judge.note_work(frozenset([OWNER]), 15.0)  # a build nothing was answered after, long before the ping
    ws.receive(30.0, 20)
    assert w.busy_seconds(31.0, 40.0) == []


def test_an_ssh_clients_last_unanswered_send_is_no_request():
    """An idle `ssh -N -L` tunnel on a loaded box: the forwarded connection closed, the client sent its EOF, the
    server its CLOSE, and the client's CLOSE confirming it came late and is never answered. SSH confirms requests
    at once, so no send of an SSH client is a request outstanding; the same pattern to a database is one."""
    ssh = Sock(1, lport=41000, peer="10.200.0.1", pport=22).send(0.0, 60).receive(0.05, 3000).send(0.1, 60)
    ssh.receive(0.2, 80).send(1.6, 52)  # EOF answered by the server's EOF+CLOSE; our CLOSE 1.4 s later
    w = World(ssh)
    assert w.busy_seconds(2.0, 60.0) == []
    db = Sock(2, lport=41001, peer="10.200.0.1", pport=5432).send(0.0, 60).receive(0.05, 3000).send(0.1, 60)
    db.receive(0.2, 80).send(1.6, 52)
    assert World(db).busy_seconds(2.0, 10.0)


def test_inbound_heartbeats_are_keyed_by_the_local_port_not_the_clients_port():
    w = World(listening=(9000,))
    socks = []

    def beat(t):  # a client connects anew every 10 s and sends a line nobody answers (a metrics push)
        if t % 10 == 0:
            if socks:
                w.socks.remove(socks[-1])
            socks.append(Sock(200 + len(socks), lport=9000, peer="10.0.0.9", pport=41000 + len(socks)).receive(t))
            w.socks.append(socks[-1])

    busy = w.busy_seconds(0.0, 120.0, each=beat)
    assert busy and max(busy) < 10.0, busy


def test_a_closed_connection_peer_is_no_wait_and_fallback_facts_count_only_a_moving_queue():
    s = Sock(1).send(0.0)
    s.state = tcp_diag.CLOSE_WAIT  # the server hung up: no answer will come
    assert World(s).busy_seconds(0.0, 30.0) == []
    judge = tcp_rule.Judge()
    c = tcp_diag.Conn(socket.AF_INET, ESTABLISHED, "10.0.0.2", 50000, "10.0.0.1", 22, 5, wqueue=0)
    queued = [tcp_diag.Conn(socket.AF_INET, ESTABLISHED, "10.0.0.2", 50000, "10.0.0.1", 22, 5, wqueue=w)
              for w in (9000, 8000, 8000)]
    judge.ingest(0.0, [c])
    assert judge.busy(0.0, lambda i: OWNER, 0.0) == []
    judge.ingest(1.0, [queued[0]])
    assert judge.busy(1.0, lambda i: OWNER, 0.0) == []  # one read: a segment in flight
    judge.ingest(2.0, [queued[1]])
    assert judge.busy(2.0, lambda i: OWNER, 0.0)
    for t in range(3, 4 + int(tcp_rule.QUEUE_STALL)):
        judge.ingest(float(t), [queued[2]])
    assert judge.busy(t, lambda i: OWNER, 0.0) == [], "a queue that never moves is a stuck peer"


def test_sockets_of_no_candidate_are_not_work_and_idle_ones_cost_no_owner_lookup():
    busy_sock, idle = Sock(1).send(0.0), Sock(2, lport=50002).send(0.0).receive(0.01)
    judge = tcp_rule.Judge()
    asked = []

    def owner_of(ino):
        asked.append(ino)
        return None

    for t in (1.0, 5.0, 9.0):
        judge.ingest(t, [busy_sock.conn(t), idle.conn(t)])
        assert judge.busy(t, owner_of, 0.0) == []
    assert set(asked) == {1}


def test_equal_times_are_an_exchange_answered_at_once_and_a_query_after_ready_is_outstanding():
    """A request answered within one jiffy (loopback) reads as equal times: answered, whatever follows. A
    query sent after the server's "ready" (psql -c), a jiffy later, is outstanding."""
    answered = Sock(1).send(0.0, 40).receive(0.0, 300)
    assert World(answered).busy_seconds(1.0, 120.0) == []
    query = Sock(2).send(0.0, 100).receive(0.002, 300).send(0.006, 40)  # startup, ready, the query
    assert World(query).busy_seconds(1.0, 30.0) == [float(t) for t in range(3, 31)]


def test_an_inbound_reply_to_this_ends_ping_is_no_request_whatever_the_jiffies():
    s = Sock(1, lport=5173, peer="127.0.0.1", pport=43000)
    w = World(s, listening=(5173,))

    def ping(t):  # the server pings every 5 s; the pong lands 0-3 ms later (sometimes in the next jiffy)
        if t % 5 == 0:
            s.send(t, 6)
            s.receive(t + (0.003 if t % 15 == 0 else 0.0), 6)

    assert w.busy_seconds(0.0, 120.0, each=ping) == []


def test_a_heartbeat_whose_waits_show_only_now_and_then_stays_a_heartbeat():
    """A client's heartbeat every 3 s, mostly answered at once, now and then 2.5 s late (a long wait, two
    minutes apart): the connection never went silent, so the later long waits are still a heartbeat."""
    s = Sock(1, peer="127.0.0.1", pport=9001)
    w = World(s)
    answers = []

    def ping(t):
        if t % 3 == 0:
            s.send(t, 4)
            answers.append(t + (2.5 if (t // 3) % 40 == 1 else 0.004))
        while answers and answers[0] <= t:  # what has arrived by this read
            s.receive(answers.pop(0), 4)

    busy = w.busy_seconds(0.0, 600.0, 0.5, each=ping)
    assert busy and max(busy) <= 6.0 + tcp_rule.ANSWER_GAP, busy  # the first only


def chatter(s, t, start=0.0, rate=3000, burst=6, every=20):
    """A server's unasked pushes on connection `s`: `rate` B/s for `burst` s every `every` s, from `start`."""
    if t >= start and (t - start) % every < burst:
        s.send(t, rate)


def test_a_servers_unasked_pushes_to_a_silent_client_are_a_listeners_chatter_however_fast():
    """An editor's server pushing presence and telemetry to an open tab (through ssh -L: the tab never sends):
    3 kB/s bursts for 6 s every 20 s are a flow's rate, yet nothing was asked."""
    s = Sock(1, lport=8082, peer="127.0.0.1", pport=40010)
    w = World(s, listening=(8082,))
    assert w.busy_seconds(1.0, 300.0, each=lambda t: chatter(s, t, start=2.0)) == []


def test_a_tab_acknowledging_pushes_does_not_turn_them_into_an_answer():
    s = Sock(1, lport=8082, peer="127.0.0.1", pport=40011)
    w = World(s, listening=(8082,))

    def pushed_and_acked(t):
        chatter(s, t, start=2.0)
        if (t - 2.0) % 20 in (2.0, 4.0):
            s.receive(t + 0.05, 40)  # the tab's acknowledgement, after the server's message
    assert w.busy_seconds(1.0, 300.0, each=pushed_and_acked) == []


def test_the_same_bytes_asked_for_are_a_download_and_a_new_request_on_the_open_connection_counts_again():
    """Control for the two above: the client's request makes the server's bytes an answer (a page downloading
    through the tunnel), on a connection first seen mid-answer too, and again after chatter."""
    s = Sock(1, lport=8081, peer="127.0.0.1", pport=40012).receive(0.0, 300)
    w = World(s, listening=(8081,))

    def download(t):
        if t <= 30:
            s.send(t, 4000)
    busy = w.busy_seconds(1.0, 60.0, each=download)
    assert busy[0] <= 4.0 and max(busy) >= 30.0 and max(busy) < 40.0, busy
    assert w.busy_seconds(61.0, 120.0, each=lambda t: chatter(s, t, start=62.0)) == []
    s.receive(130.0, 200)  # a new request, answered at once and at length

    def answer(t):
        if 130 < t <= 150:
            s.send(t, 4000)
    again = w.busy_seconds(131.0, 170.0, each=answer)
    assert again and again[0] <= 134.0 and max(again) >= 150.0, again


def test_an_answer_that_starts_long_after_its_request_still_flows_as_work():
    """A server thinking 30 s before it streams: the request stays owed until the answer begins and ends."""
    s = Sock(1, lport=8083, peer="127.0.0.1", pport=40013)
    w = World(s, listening=(8083,))
    w.tick(0.5)
    s.receive(1.0, 500)

    def late_answer(t):
        if 31 <= t <= 50:
            s.send(t, 4000)
    busy = w.busy_seconds(2.0, 70.0, each=late_answer)
    assert [t for t in busy if 33 <= t <= 50] == [float(t) for t in range(33, 51)], busy


def test_between_reads_idle_connections_are_not_looked_at_again_and_a_wait_still_grows(monkeypatch):
    """The proc sampler reads sockets only when segments moved; between reads `busy` runs on the last facts. A
    connection with no request outstanding cannot become work until new facts, so it is looked at once per read:
    200 idle ones cost nothing a tick. A query outstanding still becomes a long wait at WAIT_MIN with no read."""
    looked = []
    real = tcp_rule.Track.wait_start
    monkeypatch.setattr(tcp_rule.Track, "wait_start", lambda self: looked.append(self.inode) or real(self))
    idle = [Sock(i, lport=40000 + i).send(0.0).receive(0.001) for i in range(1, 201)]
    query = Sock(500, lport=45000).send(0.5)
    judge = tcp_rule.Judge()
    judge.ingest(1.0, [s.conn(1.0) for s in [*idle, query]])
    assert judge.busy(1.0, lambda ino: OWNER, 0.0) == []
    assert len(looked) == 201
    del looked[:]
    busy_at = []
    for t in range(2, 12):
        if judge.busy(float(t), lambda ino: OWNER, 0.0):
            busy_at.append(t)
    assert set(looked) == {500}, "only the connection with a request outstanding is looked at between reads"
    assert busy_at and busy_at[0] == 0.5 + tcp_rule.WAIT_MIN + 0.5 and busy_at[-1] == 11
    query.receive(11.5, 60)  # the answer: a new read (segments moved) brings it, and every track is looked at
    judge.ingest(12.0, [s.conn(12.0) for s in [*idle, query]])
    del looked[:]
    assert judge.busy(12.0, lambda ino: OWNER, 0.0), "the answer still arriving is the query's"
    assert len(looked) == 201
    assert judge.busy(11.5 + tcp_rule.ANSWER_GAP + 1, lambda ino: OWNER, 0.0) == []


def test_a_read_of_some_sockets_updates_those_and_takes_no_other_for_closed():
    """The sockets that moved, read again alone (HostSignals._tcp_moved_only): the others keep what they knew, a
    wait on one of them is not ended, and what `busy` looks at grows by the ones read."""
    waiting, chatty = Sock(1).send(0.0), Sock(2, pport=443).send(0.0).receive(0.1)
    w = World(waiting, chatty)
    assert w.tick(3.0) == [(OWNER, w.judge.tracks[1])]  # the query has waited 3 s
    chatty.send(3.5, 1).receive(3.6, 1)
    changed = w.judge.ingest(4.0, [chatty.conn(4.0)], some=True)
    assert [c.inode for c in changed] == [2] and set(w.judge.tracks) == {1, 2}
    assert w.judge.tracks[1].wait is not None, "a socket the read left out is not closed"
    assert [t.inode for _o, t in w.judge.busy(4.0, lambda ino: OWNER, 1_700_000_004.0)] == [1]
    assert w.judge.ingest(4.5, [chatty.conn(4.5)], some=True) == []  # nothing new on it since
