"""ProcSampler on /proc-shaped snapshot trees: candidates, signals, incremental reads."""

import os
import time

import pytest
from procfake import FakeProc
from wr_agent.proc_sampler import PF_KTHREAD, ProcSampler

pytestmark = pytest.mark.unit


# Fake pty times lie in the future: utime() sets a file's ctime to now, and a pty whose atime is not after
# its ctime reads as never typed on (a new pty).
WALL0 = time.time() + 100000.0


class Clock:
    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture
def fake(tmp_path):
    return FakeProc(tmp_path / "proc")


def sampler(fake, clock=None, **kw):
    kw.setdefault("self_pid", 99999)
    kw.setdefault("wall", lambda: WALL0 + 5000.0)
    return ProcSampler(root=fake.root, sys_net=fake.sys_net, pts=fake.pts, clock=clock or Clock(), **kw)


def test_excluded_processes_are_not_candidates(fake):
    fake.proc(1, "init", ppid=0)
    fake.proc(2, "kthreadd", ppid=0, flags=PF_KTHREAD, state="D")
    fake.proc(10, "sshd", state="D")
    fake.proc(11, "systemd-journal", state="D")
    fake.proc(12, "cron")
    fake.proc(13, "sh", ppid=12, state="D")  # a cron job: excluded with its parent
    fake.proc(14, "wr-agent-relay", state="D")
    fake.proc(99999, "python3", state="D")  # the agent itself
    fake.proc(20, "make", state="D")
    fake.proc(21, "defunct", state="Z")
    sig = sampler(fake).sample()
    assert sig.dstate == [("make", "20")]
    assert sig.candidates == 1


def test_descendant_of_an_excluded_tree_seen_before_its_parent(fake):
    fake.proc(500, "apt-get", ppid=300, state="D")  # parent's pid is higher in listing order
    fake.proc(300, "apt.systemd.dai")
    assert sampler(fake).sample().dstate == []


def test_timer_sleep_is_work_other_sleeps_are_not(fake):
    fake.proc(30, "sleep", wchan="hrtimer_nanosleep")
    fake.proc(31, "python3", wchan="do_nanosleep")
    fake.proc(32, "bash", wchan="do_wait")
    fake.proc(33, "cat", wchan="pipe_read")
    sig = sampler(fake).sample()
    assert sorted(c[:2] for c in sig.timer_sleep) == [("python3", "31"), ("sleep", "30")]


def test_cpu_share_between_ticks_from_schedstat_judged_over_the_window(fake):
    """10 % of a core votes once the 10 s window holds 0.5 core-seconds; a burner votes at once."""
    clock = Clock(100.0)
    fake.uptime(1000.0)
    fake.proc(40, "cargo", ticks=0, runtime_ns=0, start_ticks=0)  # old process, never ran
    s = sampler(fake, clock)
    assert s.sample().cpu == []
    voted = []
    for t in range(1, 8):
        clock.t = 100.0 + t
        fake.proc(40, "cargo", state="R", ticks=10 * t, runtime_ns=100_000_000 * t)  # 0.1 s a second
        voted.append(bool(s.sample().cpu))
    assert voted == [False, False, False, False, True, True, True]
    clock.t = 108.0
    fake.proc(40, "cargo", state="R", ticks=71, runtime_ns=720_000_000)  # 0.02 s: under 0.05
    assert s.sample().cpu == []
    clock.t = 109.0
    fake.proc(40, "cargo", state="R", ticks=171, runtime_ns=1_720_000_000)  # a full core
    sig = s.sample()
    assert [(c, p) for c, p, _ in sig.cpu] == [("cargo", "40")]
    assert sig.cpu[0][2] == pytest.approx(1.0)


def test_multithreaded_cpu_comes_from_stat(fake):
    clock = Clock(100.0)
    fake.proc(41, "rustc", ticks=0, runtime_ns=5, threads=8)
    s = sampler(fake, clock)
    s.sample()
    clock.t = 101.0
    fake.proc(41, "rustc", ticks=300, runtime_ns=5, threads=8)  # workers burnt 3 cores; leader idle
    sig = s.sample()
    assert sig.cpu and sig.cpu[0][2] == pytest.approx(3.0)


def test_new_burner_is_busy_on_first_sight(fake):
    fake.uptime(1000.0)
    fake.proc(42, "yes", state="R", ticks=50, start_ticks=99950)  # 0.5 s old, 0.5 s of CPU
    sig = sampler(fake).sample()
    assert [(c, p) for c, p, _ in sig.cpu] == [("yes", "42")]


def _seen_in_a_timer_sleep_then_its_wchan_changed(fake):
    """pid 43 in a timer sleep, sampled once; then its wchan on disk says otherwise (a re-read would see it)."""
    clock = Clock(100.0)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=7)
    s = sampler(fake, clock)
    assert s.sample().timer_sleep == [("sleep", "43", 0.0, 0)]
    with open(os.path.join(fake.root, "43", "wchan"), "w") as f:
        f.write("pipe_read")
    return clock, s


def test_leader_that_did_not_run_is_not_reread(fake):
    """A sleeping leader whose runtime is unchanged keeps its cached state: stat/wchan are not read."""
    clock, s = _seen_in_a_timer_sleep_then_its_wchan_changed(fake)  # runtime unchanged: the cached answer stands
    clock.t = 101.0
    assert s.sample().timer_sleep == [("sleep", "43", 1.0, 0)]
    fake.proc(43, "sleep", wchan="pipe_read", runtime_ns=9)  # it ran: looked at again
    clock.t = 102.0
    assert s.sample().timer_sleep == []


def test_a_sleep_first_seen_as_it_began_is_not_woken_by_the_tail_of_that_run(fake):
    """`sleep 20 && deploy` first looked at while its last instructions before the sleep were still running: its
    runtime was read before that run ended, so the next read shows more runtime, but the kernel put it on a CPU
    no more times since (schedstat's third field). That is not a wake: it stays one sleep, which counts from 3 s
    (it was read as a ticking daemon's next sleep, never work, for the whole job: seen under load)."""
    clock = Clock(100.0)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2)
    s = sampler(fake, clock)
    assert s.sample().timer_sleep == [("sleep", "43", 0.0, 0)]
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=900_000, slices=2)  # the run's tail, no new run
    for t in (101.0, 102.0, 103.5):
        clock.t = t
        sig = s.sample()
    assert sig.timer_sleep == [("sleep", "43", 3.5, 0)]
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=950_000, slices=3)  # woke, and sleeps again
    clock.t = 104.0
    assert s.sample().timer_sleep == [("sleep", "43", 0.0, 1)]


def test_a_sleep_woken_by_the_boxs_thaw_is_still_the_jobs_first_sleep(fake):
    """`sleep 400 && build`, then the box froze (asleep) and thawed: the freezer wakes every sleeper, which runs a
    moment and sleeps again with its time left. The agent did not tick meanwhile (a gap on its suspend-aware
    clock): that run is the thaw's, so the sleep stays one sleep, counted from before (the live box read IDLE
    after the thaw and slept again under the job: its restarted sleep's wchan is `do_syscall_64`). A run without a
    gap is a wake, as before."""
    clock = Clock(100.0)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2)
    s = sampler(fake, clock, gap_clock=clock)
    assert s.sample().timer_sleep == [("sleep", "43", 0.0, 0)]
    clock.t = 105.0
    assert s.sample().timer_sleep == [("sleep", "43", 5.0, 0)]
    # The freeze, seen by one more tick before the agent is frozen too: trapped (cgroup v2's trap in get_signal).
    fake.proc(43, "sleep", wchan="get_signal", runtime_ns=750_000, slices=3)
    clock.t = 106.0
    assert s.sample().timer_sleep == [("sleep", "43", 6.0, 0)]
    # Thawed: it ran, and sleeps again in the restarted call, whose wchan names no sleep (seen on a live box).
    fake.proc(43, "sleep", wchan="do_syscall_64", runtime_ns=800_000, slices=4)
    clock.t = 150.0  # no tick for 44 s: the box was frozen
    assert s.sample().timer_sleep == [("sleep", "43", 50.0, 0)]
    assert s.thawed
    # The restart may come a tick after the thaw's first tick: the same sleep still (wchan names no new sleep).
    fake.proc(43, "sleep", wchan="do_syscall_64", runtime_ns=850_000, slices=5)
    clock.t = 151.0
    assert s.sample().timer_sleep == [("sleep", "43", 51.0, 0)]
    assert not s.thawed
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=900_000, slices=6)  # a wake of its own
    clock.t = 152.0
    assert s.sample().timer_sleep == [("sleep", "43", 0.0, 1)]


def test_a_sleeper_caught_runnable_is_judged_by_where_it_blocks_next(fake):
    """After a thaw the whole box wakes at once; under load the sleeper waits for a CPU (wchan 0) before its sleep
    restarts. That look says nothing: the next one does. A restart is the same sleep; a new timer sleep after a run
    of its own is a wake (a daemon's tick); blocked elsewhere, it is no longer in a timer sleep."""
    clock = Clock(100.0)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2)
    fake.proc(44, "python3", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2)
    fake.proc(45, "python3", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2)
    s = sampler(fake, clock, gap_clock=clock)
    s.sample()
    clock.t = 110.0
    s.sample()
    for pid in (43, 44, 45):  # each ran and is runnable now
        fake.proc(pid, "sleep" if pid == 43 else "python3", wchan="0", runtime_ns=750_000, slices=3, state="R")
    clock.t = 111.0
    assert sorted(t[:2] + t[3:] for t in s.sample().timer_sleep) == [("python3", "44", 0), ("python3", "45", 0),
                                                                      ("sleep", "43", 0)]
    fake.proc(43, "sleep", wchan="do_syscall_64", runtime_ns=800_000, slices=4)  # restarted: the same sleep
    fake.proc(44, "python3", wchan="hrtimer_nanosleep", runtime_ns=900_000, slices=4)  # ran, then a new sleep
    fake.proc(45, "python3", wchan="pipe_read", runtime_ns=900_000, slices=4)  # ran, then blocked elsewhere
    clock.t = 112.0
    assert sorted(s.sample().timer_sleep) == [("python3", "44", 0.0, 1), ("sleep", "43", 12.0, 0)]


def test_a_schedstat_that_moved_only_in_its_wait_fields_is_a_process_that_did_not_run(fake):
    """The bytes differ (run delay, timeslices) but the runtime does not: still not run, nothing re-read."""
    clock, s = _seen_in_a_timer_sleep_then_its_wchan_changed(fake)
    with open(os.path.join(fake.root, "43", "schedstat"), "w") as f:
        f.write("7 12345 2\n")
    clock.t = 101.0
    assert s.sample().timer_sleep == [("sleep", "43", 1.0, 0)]


def _listings(monkeypatch, fake):
    calls = []
    real = os.listdir

    def counting(path):
        if path == fake.root:
            calls.append(path)
        return real(path)
    monkeypatch.setattr(os, "listdir", counting)
    return calls


def test_proc_is_listed_only_when_the_kernel_handed_out_a_pid(fake, monkeypatch):
    """No pid handed out since the last tick (loadavg's last pid): no process can have appeared, so /proc is
    not listed and the known processes are read; a new pid lists it on that very tick."""
    clock = Clock(100.0)
    fake.pid_namespace(300)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=7)
    fake.proc(46, "dd", state="D", runtime_ns=5)
    fake.proc(47, "python3", wchan="do_select", runtime_ns=9)
    s = sampler(fake, clock)
    calls = _listings(monkeypatch, fake)
    sig = s.sample()
    assert sig.timer_sleep == [("sleep", "43", 0.0, 0)] and sig.candidates == 3 and len(calls) == 1
    fake.proc(44, "cc1", state="R", ticks=100, runtime_ns=10**9, start_ticks=99800)
    for t in (101.0, 102.0):
        clock.t = t
        sig = s.sample()
        assert [c for c, _, _ in sig.cpu] == [] and sig.candidates == 3  # (the kernel would have said "44")
        assert sig.timer_sleep == [("sleep", "43", t - 100.0, 0)]  # a known sleep still grows between listings
        assert sig.dstate == [("dd", "46")]
    assert len(calls) == 1
    fake.pid_namespace(301)
    clock.t = 103.0
    sig = s.sample()
    assert [c for c, _, _ in sig.cpu] == ["cc1"] and sig.candidates == 4 and len(calls) == 2
    fake.proc(43, "sleep", wchan="pipe_read", runtime_ns=9)  # a known process is still read every tick
    clock.t = 104.0
    sig = s.sample()
    assert sig.timer_sleep == [] and sig.dstate == [("dd", "46")] and len(calls) == 2


def test_proc_is_listed_every_while_and_after_a_process_could_not_be_read(fake, monkeypatch):
    clock = Clock(100.0)
    fake.pid_namespace(300)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=7)
    s = sampler(fake, clock)
    calls = _listings(monkeypatch, fake)
    s.sample()
    clock.t = 100.0 + 29.0
    s.sample()
    assert len(calls) == 1
    clock.t = 100.0 + 30.0  # FULL_SCAN_SECONDS
    s.sample()
    assert len(calls) == 2
    os.makedirs(os.path.join(fake.root, "45"))  # listed, but no stat to read (it was exiting)
    fake.pid_namespace(301)
    clock.t += 1
    s.sample()
    clock.t += 1
    s.sample()
    assert len(calls) == 4  # listed again the next tick, though no pid was handed out


@pytest.mark.parametrize("nspid", ["4242 1", "1"])
def test_a_proc_of_another_pid_namespace_is_listed_every_tick(fake, monkeypatch, nspid):
    """Its loadavg counts the reader's namespace's pids, not this /proc's."""
    clock = Clock(100.0)
    fake.pid_namespace(300, nspid=nspid)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=7)
    s = sampler(fake, clock)
    calls = _listings(monkeypatch, fake)
    for t in (100.0, 101.0, 102.0):
        clock.t = t
        s.sample()
    assert len(calls) == 3


def test_gone_process_is_dropped_and_its_fds_closed(fake):
    fake.proc(44, "make", state="D")
    s = sampler(fake)
    s.sample()
    held = s.fds_held
    assert held > 0 and "44" in s.procs
    fake.remove(44)
    assert s.sample().dstate == []
    assert "44" not in s.procs and s.fds_held == 0


def test_an_open_connection_is_not_work_but_a_send_queue_the_peer_drains_is(fake):
    """The /proc/net/tcp fallback (all a FakeProc has): queues and timers only."""
    fake.proc(50, "curl", fds=["/dev/null", "socket:[7001]", "socket:[7004]"])
    fake.proc(51, "sshd", fds=["socket:[7002]"])
    fake.tcp([("01", "7001"), ("01", "7002", 5000), ("0A", "7003"), ("01", "7004", 0)])
    clock = Clock()
    s = sampler(fake, clock)
    assert s.tcp_kind == "coarse"
    assert s.sample().tcp == []  # idle connections; sshd's queue is not a candidate's
    fake.tcp([("01", "7001"), ("01", "7002", 4000), ("01", "7004", 9000)])
    clock.t += 1
    assert s.sample().tcp == []  # one read with a queue: a segment in flight
    fake.tcp([("01", "7001"), ("01", "7002", 3000), ("01", "7004", 7000)])
    clock.t += 1
    ((comm, pid, facts),) = s.sample().tcp
    assert (comm, pid) == ("curl", "50")
    assert facts["peer"] == "127.0.0.1" and facts["port"] == 8080


def test_connections_are_judged_while_a_daemon_sleeps_on_a_timer(fake):
    """A daemon between checks (`time.sleep(10)`, seen to wake) used to make the sampler skip TCP altogether:
    a job's connection was then never judged, whatever it did."""
    fake.proc(60, "python3", wchan="hrtimer_nanosleep")
    fake.proc(61, "rsync", fds=["socket:[7101]"])
    clock = Clock()
    s = sampler(fake, clock)
    for n, queue in enumerate((9000, 8000, 7000)):
        fake.tcp([("01", "7101", queue)])
        fake.proc(60, "python3", wchan="hrtimer_nanosleep", runtime_ns=n)  # woke and sleeps again
        clock.t += 1
        sig = s.sample()
    assert sig.timer_sleep and [t[:2] for t in sig.tcp] == [("rsync", "61")]


class ListReader:
    """Connections as a sock_diag read gives them (tcp_diag.Conn), counting the reads."""

    kind = "sock_diag"

    def __init__(self):
        self.conns, self.reads = [], 0

    def read(self):
        self.reads += 1
        return list(self.conns)

    def close(self):
        pass


def conn(inode, sent_ago=None, recv_ago=None, lport=40000, peer="10.0.3.7", pport=5432, out=0, inn=0):
    from wr_agent import tcp_diag
    return tcp_diag.Conn(2, tcp_diag.ESTABLISHED, "10.0.0.2", lport, peer, pport, inode, sent_ago=sent_ago,
                         recv_ago=recv_ago, bytes_out=out, bytes_in=inn, notsent=0)


def test_sockets_are_read_only_when_segments_moved_and_waits_grow_between_reads(fake):
    fake.proc(70, "psql", fds=["socket:[7201]"])
    fake.snmp(10, 10, 1)
    reader, clock = ListReader(), Clock()
    s = sampler(fake, clock, tcp_reader=reader, wall=lambda: 1_700_000_000.0 + clock.t)
    reader.conns = [conn(7201, sent_ago=0, out=30)]  # a query just sent
    assert s.sample().tcp == [] and reader.reads == 1
    for _ in range(3):
        clock.t += 1
        sig = s.sample()
    assert reader.reads == 1, "no segment moved: the last read still holds"
    ((comm, _pid, facts),) = sig.tcp
    assert comm == "psql" and facts["peer"] == "10.0.3.7" and facts["since"] == 100.0
    fake.snmp(11, 10, 1)  # the answer came
    reader.conns = [conn(7201, sent_ago=3000, recv_ago=0, out=30, inn=40)]
    clock.t += 1
    s.sample()
    assert reader.reads == 2
    fake.snmp(12, 11, 0)  # closed: the FIN exchange moved segments
    reader.conns = []
    clock.t += 1
    s.sample()
    clock.t += 1
    assert s.sample().tcp == [] and reader.reads == 3
    clock.t += 1
    s.sample()
    assert reader.reads == 3, "nothing established, nothing tracked: nothing to read"


class LookupReader(ListReader):
    """A sock_diag reader that also looks sockets up one by one (NetlinkReader.lookup), counting the lookups."""

    def __init__(self):
        super().__init__()
        self.lookups = 0

    def lookup(self, conns):
        self.lookups += 1
        now = {c.inode: c for c in self.conns}
        return [now[c.inode] for c in conns if c.inode in now]


def counted(inode, segs_in, segs_out, retrans=0, **kw):
    c = conn(inode, **kw)
    c.sockid, c.segs_in, c.segs_out, c.retrans = bytes(48), segs_in, segs_out, retrans
    return c


def test_the_sockets_that_moved_are_read_alone_while_they_account_for_every_segment_as_the_namespace_counts(fake):
    """The namespace counts a retransmission in no OutSegs; a socket counts it in its segs_out and its retransmits.
    Compared that way, one chatty connection's lookups stand for the whole table; a segment it does not account for
    (a query on the idle one) reads every socket that tick."""
    fake.proc(70, "psql", fds=["socket:[7201]", "socket:[7202]"])
    reader, clock = LookupReader(), Clock()
    s = sampler(fake, clock, tcp_reader=reader)
    fake.snmp(10, 10, 2)
    reader.conns = [counted(7201, 5, 5, recv_ago=0, out=10, inn=10),
                    counted(7202, 5, 5, lport=40001, recv_ago=0, out=10, inn=10)]
    s.sample()
    assert (reader.reads, reader.lookups) == (1, 0)
    # A ping and its answer on 7201, one of its segments sent twice: the namespace counts 2 out, the socket 3 and 1.
    fake.snmp(12, 12, 2)
    reader.conns[0] = counted(7201, 7, 8, retrans=1, sent_ago=0, recv_ago=0, out=11, inn=11)
    clock.t += 1
    s.sample()
    assert (reader.reads, reader.lookups) == (1, 1), "the moved sockets accounted for every segment"
    # The same again, but the namespace counts what the socket retransmitted as well: not as the kernel counts.
    fake.snmp(14, 15, 2)
    reader.conns[0] = counted(7201, 9, 11, retrans=2, sent_ago=0, recv_ago=0, out=12, inn=12)
    clock.t += 1
    s.sample()
    assert (reader.reads, reader.lookups) == (2, 2), "a segment the lookups do not account for: every socket"
    # The ping again, and a query on the idle connection in the same tick: every socket, and the query is seen.
    fake.snmp(16, 18, 2)
    reader.conns = [counted(7201, 11, 13, retrans=2, sent_ago=0, recv_ago=0, out=13, inn=13),
                    counted(7202, 5, 6, lport=40001, sent_ago=0, recv_ago=1000, out=40, inn=10)]
    clock.t += 1
    s.sample()
    assert (reader.reads, reader.lookups) == (3, 3)
    assert s.tcp_judge.tracks[7202].bytes_out == 40


def test_no_packet_on_any_interface_means_the_segment_counters_are_not_read_again(fake):
    """/proc/net/snmp (every protocol's table, ~16 us) is read only when /proc/net/dev moved: a segment is a packet
    on some interface, loopback's included. The probe: snmp written to say segments moved while net/dev stays the
    same (no kernel gives that) is not read, so the sockets are not read either; once net/dev moves, both are."""
    fake.proc(70, "psql", fds=["socket:[7201]"])
    fake.snmp(10, 10, 1)
    reader, clock = ListReader(), Clock()
    s = sampler(fake, clock, tcp_reader=reader)
    reader.conns = [conn(7201, sent_ago=0, out=30)]
    s.sample()
    assert reader.reads == 1
    with open(os.path.join(fake.root, "net/dev")) as f:
        dev = f.read()
    fake.snmp(20, 20, 1)
    with open(os.path.join(fake.root, "net/dev"), "w") as f:
        f.write(dev)
    clock.t += 1
    s.sample()
    assert reader.reads == 1, "net/dev did not move: the segment counters were not read"
    fake.snmp(21, 21, 1)  # a packet: net/dev moves with it
    clock.t += 1
    s.sample()
    assert reader.reads == 2


def test_segments_that_moved_on_a_tick_where_cpu_voted_are_read_on_the_next(fake):
    """A tick where CPU voted reads no socket; packets that came on it must still be read after it, even when the
    next tick's net/dev is the same as that tick's (the comparison is with net/dev at the last snmp read)."""
    fake.proc(80, "make", state="R", ticks=0, runtime_ns=0)
    fake.proc(81, "psql", fds=["socket:[7301]"])
    fake.snmp(10, 10, 1)
    reader, clock = ListReader(), Clock()
    s = sampler(fake, clock, tcp_reader=reader)
    s.sample()
    assert reader.reads == 1
    fake.proc(80, "make", state="R", ticks=100, runtime_ns=1_000_000_000)  # a second of CPU: no socket read
    fake.snmp(11, 11, 1)  # and on the same tick, a query went out
    reader.conns = [conn(7301, sent_ago=0, out=30)]
    clock.t += 1
    assert s.sample().cpu and reader.reads == 1
    fake.proc(80, "make", state="S", ticks=100, runtime_ns=1_000_000_000)  # make is done; nothing moves now
    clock.t += 1
    s.sample()
    assert reader.reads == 2, "what moved while CPU voted is read once CPU no longer votes"


def test_no_tcp_reading_when_cpu_already_voted_and_one_reason_per_process(fake):
    fake.proc(80, "make", state="R", ticks=0, runtime_ns=0)
    fake.proc(81, "psql", fds=["socket:[7301]", "socket:[7302]"])
    reader, clock = ListReader(), Clock()
    s = sampler(fake, clock, tcp_reader=reader)
    reader.conns = [conn(7301, sent_ago=0, out=30), conn(7302, sent_ago=0, lport=40001, peer="10.0.3.8", out=30)]
    s.sample()
    assert reader.reads == 1
    fake.proc(80, "make", state="R", ticks=100, runtime_ns=1_000_000_000)  # a second of CPU
    clock.t += 1
    assert s.sample().cpu and reader.reads == 1
    assert s.sample(busy_hint=True).tcp == [] and reader.reads == 1
    clock.t += 2
    reader.conns = [conn(7301, sent_ago=3000, out=30), conn(7302, sent_ago=2000, lport=40001, peer="10.0.3.8",
                                                               out=30)]
    fake.proc(80, "make", state="S", ticks=100, runtime_ns=1_000_000_000)
    sig = s.sample()
    assert [(t[0], t[1], t[2]["peer"]) for t in sig.tcp] == [("psql", "81", "10.0.3.7")]  # the one waiting longest


def test_status_names_the_tcp_view(fake):
    assert sampler(fake, tcp_reader=None).tcp_kind is None
    assert sampler(fake, tcp_reader=ListReader()).tcp_kind == "sock_diag"


def test_net_bytes_count_box_crossing_interfaces_only(fake):
    for name, kind in (("eth0", None), ("br0", "bridge"), ("tap0", "tap"), ("vnet1", "brport"),
                       ("veth12", None), ("lo", None)):
        fake.iface(name, kind)
    names = ("eth0", "br0", "tap0", "vnet1", "veth12", "lo")
    fake.dev(dict((n, (0, 0)) for n in names))
    s = sampler(fake)
    assert s.sample().net_bytes == 0
    fake.dev(dict((n, (1000, 500)) for n in names))
    assert s.sample().net_bytes == 1500


def test_interface_kinds_are_kept_only_for_interfaces_present(fake):
    """Each container start brings a new vethXXXX: the cache of interface kinds must not grow with them."""
    fake.iface("eth0")
    s = sampler(fake)
    eth0 = 0
    for i in range(200):
        eth0 += 1000
        veth = f"veth{i:04x}"
        fake.iface(veth)
        fake.dev({"lo": (7 * i, 7 * i), "eth0": (eth0, eth0 // 2), veth: (5 * i, 5 * i)})
        net = s.sample().net_bytes
        if i:
            assert net == 1500  # eth0 only: lo and the veths never count
        assert set(s.if_kind) == {"lo", "eth0", veth}
    fake.dev({"lo": (0, 0)})
    s.sample()
    assert set(s.if_kind) == {"lo"}


def test_keystroke_age_from_pty_atime(fake):
    fake.pty(0, WALL0 + 4000.0)
    fake.pty(3, WALL0 + 4995.0)
    assert sampler(fake).sample().keystroke_age == pytest.approx(5.0)


def test_a_new_pty_is_not_a_keystroke(fake):
    """A fresh devpts inode has atime == ctime (its creation): nobody has typed on it yet."""
    fake.pty(4, time.time() - 1.0)  # atime not after ctime, as on a new pty (or one chowned since)
    s = ProcSampler(root=fake.root, sys_net=fake.sys_net, pts=fake.pts, self_pid=99999, wall=time.time)
    assert s.sample().keystroke_age is None


def _tty_writer(fake, clock, pty_atime):
    fake.pty(0, pty_atime)
    fake.proc(60, "make", fds=["/dev/pts/0", "/dev/pts/0"], wchar=100, runtime_ns=1)
    s = sampler(fake, clock)
    s.sample()
    fake.proc(60, "make", wchar=1100, runtime_ns=2)
    clock.t = 101.0
    return s.sample()


def test_tty_output_bytes_from_wchar_on_a_watched_pty(fake):
    assert _tty_writer(fake, Clock(100.0), WALL0 + 4900.0).tty_bytes == 1000  # typed on 100 s ago


def test_tty_output_nobody_watches_does_not_count(fake):
    """`top` in a detached tmux pane: no keystroke on its pty for longer than the watch window."""
    assert _tty_writer(fake, Clock(100.0), WALL0 + 5000.0 - 3600.0).tty_bytes == 0


def test_tty_output_counts_while_a_multiplexer_client_is_attached_and_watched(fake):
    fake.pty(1, WALL0 + 4990.0)  # the client's terminal: typed on 10 s ago
    fake.proc(61, "tmux: client", fds=["/dev/pts/1", "/dev/pts/1"], runtime_ns=1, wchar=0)
    assert _tty_writer(fake, Clock(100.0), WALL0 + 5000.0 - 3600.0).tty_bytes == 1000


def test_periodic_timer_sleep_reports_how_long_it_slept(fake):
    """A `time.sleep(1)` loop runs every tick: its sleep is never long. A fresh `sleep 5` slept since birth."""
    clock = Clock(100.0)
    fake.uptime(1000.0)
    fake.proc(80, "python3", wchan="hrtimer_nanosleep", runtime_ns=1)
    s = sampler(fake, clock)
    s.sample()
    for n in range(2, 5):
        clock.t = 100.0 + n
        fake.uptime(1000.0 + n)
        fake.proc(80, "python3", wchan="hrtimer_nanosleep", runtime_ns=n)
        if n == 4:
            fake.proc(81, "sleep", wchan="hrtimer_nanosleep", runtime_ns=1,
                      start_ticks=int((1000.0 + n - 0.5) * 100))  # born half a second ago
        sig = s.sample()
        assert ("python3", "80", 0.0, n - 1) in sig.timer_sleep  # woke from each of its sleeps
    assert ("sleep", "81", pytest.approx(0.5), 0) in sig.timer_sleep
    clock.t = 107.0
    sig = s.sample()
    assert ("sleep", "81", pytest.approx(3.5), 0) in sig.timer_sleep


def test_sleep_infinity_is_not_a_job_step(fake):
    fake.proc(82, "sleep", wchan="hrtimer_nanosleep", cmdline=["sleep", "infinity"])
    fake.proc(83, "sleep", wchan="hrtimer_nanosleep", cmdline=["sleep", "600"])
    assert [t[:2] for t in sampler(fake).sample().timer_sleep] == [("sleep", "83")]


def test_fifo_open_waiting_for_its_partner(fake):
    fake.proc(84, "tee", wchan="wait_for_partner")
    assert sampler(fake).sample().fifo_wait == [("tee", "84")]


def test_small_periodic_cpu_blips_do_not_vote(fake):
    """50 ms of CPU every 10 s: one tick shows 5 % of a core, the window 0.5 %."""
    clock = Clock(100.0)
    fake.proc(85, "lsp", runtime_ns=0)
    s = sampler(fake, clock)
    s.sample()
    runtime, votes = 0, 0
    for t in range(1, 41):
        clock.t = 100.0 + t
        if t % 10 == 0:
            runtime += 50_000_000
        fake.proc(85, "lsp", runtime_ns=runtime)
        votes += bool(s.sample().cpu)
    assert votes == 0


def test_reaped_children_count_as_the_parents_cpu(fake):
    """make -j: cc1 runs that live and die between two ticks show up in make's cutime when reaped."""
    clock = Clock(100.0)
    fake.proc(86, "make", runtime_ns=0, child_ticks=0)
    s = sampler(fake, clock)
    s.sample()
    clock.t = 101.0
    fake.proc(86, "make", runtime_ns=1_000_000, child_ticks=60)  # 0.6 s of compiles reaped this tick
    assert [c[:2] for c in s.sample().cpu] == [("make", "86")]


def test_unseen_children_reaped_by_pid_1_count_and_children_it_saw_do_not_count_twice(fake):
    """A setup script's tools handed off to init: each lives less than a tick, init's cutime grows. A long job the
    sampler watched, reaped by init when it ends, is not counted again."""
    clock = Clock(100.0)
    fake.proc(1, "init", runtime_ns=0, child_ticks=0, ppid=0)
    fake.proc(50, "job", runtime_ns=0, ticks=500)
    s = sampler(fake, clock)
    s.sample()
    clock.t = 101.0
    fake.proc(1, "init", runtime_ns=0, child_ticks=80)  # 0.8 s of tools nobody saw, reaped by init
    fake.proc(77, "awk", state="Z")  # a pid was handed out: the tick lists /proc
    assert ("init", "1") in [c[:2] for c in s.sample().cpu]
    for t in range(2, 30):  # quiet, long enough for the window to forget
        clock.t = 100.0 + t
        fake.proc(78 + t, "true", state="Z")
        s.sample()
    clock.t = 130.0
    fake.remove(50)  # the watched job ends; init reaps its 5 s of CPU
    fake.proc(1, "init", runtime_ns=0, child_ticks=580)
    fake.proc(200, "true", state="Z")
    assert ("init", "1") not in [c[:2] for c in s.sample().cpu]


def test_under_candidates_user_init_of_others_counts_only_while_it_has_a_child_of_the_user(fake):
    """A box shared with other users (`--candidates user`): init reaps everyone's orphans, so its reaped time is the
    user's only while an orphan of the user's was seen under it lately; before one is, and a while after the last
    one went, others' work reaped by init (a CI runner's, a service's) is not the user's."""
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a snapshot dir to another uid")
    user = 4242
    clock = Clock(100.0)
    fake.proc(1, "init", runtime_ns=0, child_ticks=0, ppid=0)
    s = sampler(fake, clock, only_uid=user)
    s.sample()
    reaped, pid = 0, 300

    def tick(t: float, more: int) -> list[str]:
        nonlocal reaped, pid
        clock.t = t
        reaped += more
        pid += 1
        fake.proc(1, "init", runtime_ns=0, child_ticks=reaped, ppid=0)
        fake.proc(pid, "true", state="Z", ppid=999)  # a pid was handed out: the tick lists /proc
        return [c[1] for c in s.sample().cpu]

    assert "1" not in tick(101.0, 80)  # 0.8 s of someone else's tools
    fake.proc(60, "setup.sh", ppid=1)  # an orphan of the user's, seen under init
    os.chown(os.path.join(fake.root, "60"), user, user)
    assert "1" not in tick(102.0, 0)
    assert "1" in tick(103.0, 80)  # now the unseen tools may be the user's
    fake.remove(60)
    for t in range(104, 140):  # quiet: the user's orphan gone long since, the window forgotten
        tick(float(t), 0)
    assert "1" not in tick(140.0, 80)


def test_a_process_that_blocks_between_the_first_two_reads_is_seen_blocked(fake):
    """A shell's fork seen mid-exec: the stat says running `bash`; before its runtime is read it has exec'd
    `cat` and blocked opening a FIFO for good (it never runs again, so only a fresh read can tell)."""
    clock = Clock(100.0)
    fake.proc(85, "bash", state="R", runtime_ns=1_000, wchan="0")

    class Racing(ProcSampler):
        def _runtime(self, p, raw=None):
            if p.pid == "85":  # it runs its last instructions now, between the agent's two reads
                fake.proc(85, "cat", state="S", runtime_ns=2_000, wchan="wait_for_partner")
            return super()._runtime(p, raw)

    s = Racing(root=fake.root, sys_net=fake.sys_net, pts=fake.pts, clock=clock, wall=lambda: WALL0 + 5000.0,
               self_pid=99999)
    waits = []
    for t in range(3):
        clock.t = 100.0 + t
        waits.append(s.sample().fifo_wait)
    assert waits[-1] == [("cat", "85")], waits


def test_excluded_pid_and_its_descendants(fake):
    fake.proc(90, "workroom-app", state="D")
    fake.proc(91, "python3", ppid=90, state="D")
    fake.proc(92, "make", state="D")
    assert sampler(fake, exclude_pids=[90]).sample().dstate == [("make", "92")]


def test_an_excluded_pid_handed_out_again_is_not_excluded(fake):
    """The app's relay (excluded when it subscribed) exits; the kernel gives its pid to a build later."""
    fake.proc(90, "wr-agent-relay", start_ticks=100)
    s = sampler(fake)
    s.exclude(90)
    fake.proc(91, "make", ppid=90, state="D", start_ticks=120)
    assert s.sample().dstate == []  # the relay's tree is left out
    fake.remove(91)
    fake.remove(90)
    s.sample()
    fake.proc(90, "make", state="D", start_ticks=900)  # same number, another process
    assert s.sample().dstate == [("make", "90")]


def test_candidates_user_only_counts_own_uid(fake):
    fake.proc(70, "make", state="D")
    fake.proc(71, "make", state="D")
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a snapshot dir to another uid")
    os.chown(os.path.join(fake.root, "71"), 65534, 65534)
    sig = sampler(fake, only_uid=os.getuid()).sample()
    assert sig.dstate == [("make", "70")]


@pytest.mark.linux(reason="reads this machine's /proc")
def test_live_proc_parses():
    """A live /proc read through the same code: at least this test process is a candidate."""
    s = ProcSampler(self_pid=1)
    sig = s.sample()
    s.close()
    assert sig.candidates >= 1


def test_exec_renames_the_process(fake):
    """`exec tmux attach` from a shell keeps the pid; the new comm is picked up when it next runs."""
    clock = Clock(100.0)
    fake.proc(93, "bash", runtime_ns=1)
    s = sampler(fake, clock)
    s.sample()
    fake.proc(93, "tmux: client", runtime_ns=2)
    clock.t = 101.0
    s.sample()
    assert s.procs["93"].comm == "tmux: client"


def test_exclude_later_leaves_out_a_known_process_tree(fake):
    """The app subscribes after the sampler already knows it: its tree is looked at afresh and left out."""
    fake.proc(94, "workroom-app", state="D")
    fake.proc(95, "python3", ppid=94, state="D")
    fake.proc(96, "make", state="D")
    s = sampler(fake)
    assert len(s.sample().dstate) == 3
    s.exclude(94)
    assert s.sample().dstate == [("make", "96")]


def test_a_process_that_names_itself_ours_after_first_sight_is_left_out(fake):
    """The app's relay or installer probe starts as python3 and names itself wr-agent-* only after its
    imports: seen busy before that, it is left out from the tick that sees the new name."""
    clock = Clock(100.0)
    fake.proc(97, "python3", runtime_ns=1, ticks=0)
    fake.proc(98, "make", runtime_ns=1, ticks=0)
    s = sampler(fake, clock)
    s.sample()
    clock.t = 101.0
    fake.proc(97, "python3", runtime_ns=900_000_000, ticks=90)
    fake.proc(98, "make", runtime_ns=900_000_000, ticks=90)
    assert sorted(c[0] for c in s.sample().cpu) == ["make", "python3"]
    clock.t = 102.0
    fake.proc(97, "wr-agent-relay", runtime_ns=1_800_000_000, ticks=180)
    fake.proc(98, "make", runtime_ns=1_800_000_000, ticks=180)
    assert [c[0] for c in s.sample().cpu] == ["make"]


def test_an_excluded_pid_with_a_start_time_binds_only_that_process(fake):
    """`--exclude-pid PID:START` (the local provider's form): after a restart the number may belong to
    another process; its start time says so."""
    fake.proc(90, "make", state="D", start_ticks=900)
    assert sampler(fake, exclude_pids=[("90", "100")]).sample().dstate == [("make", "90")]
    assert sampler(fake, exclude_pids=[("90", "900")]).sample().dstate == []


def test_bare_exclude_pids_are_pinned_for_every_re_execution():
    from wr_agent import exclusions
    starts = {"41": "5000", "self": "1"}
    argv = ["serve", "--exclude-pid", "41", "--exclude-pid=42", "--exclude-pid", "43:77", "--hold-seconds", "5"]
    assert exclusions.pin_exclude_argv(argv, starts.get) == [
        "serve", "--exclude-pid", "41:5000", "--exclude-pid", "43:77", "--hold-seconds", "5"]  # 42 is gone
    assert exclusions.pin_exclude_argv(argv, lambda pid: None) == [  # no start times here (no /proc)
        "serve", "--exclude-pid", "41", "--exclude-pid", "42", "--exclude-pid", "43:77", "--hold-seconds", "5"]
    assert exclusions.parse_exclude("43:77") == ("43", "77") and exclusions.parse_exclude("9") == ("9", None)
    for bad in ("x", "0", "4:", "4:x", "-4"):
        with pytest.raises(ValueError):
            exclusions.parse_exclude(bad)
    assert exclusions.proc_start_time(os.getpid()) == exclusions.proc_start_time("self")


def test_a_replacement_agent_goes_on_from_what_the_last_one_knew_of_a_sleep_across_the_boxs_sleep(fake):
    """`sleep 400 && build`, the box froze and thawed and the agent was replaced (a frozen agent is killed, not
    handed off): the sleep's restart shows wchan `do_syscall_64`, no timer, so a fresh sampler saw a process
    blocked somewhere and called the job idle. Given what the last one knew (kept by pid and start time), it is the
    same sleep, never seen to wake, counted from when it began; a daemon the last one saw wake is a heartbeat still;
    a pid reused by another process since (another start time) is not the old job."""
    clock = Clock(100.0)
    fake.uptime(1000.0)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2, start_ticks=90000)
    fake.proc(44, "python3", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2, start_ticks=80000)
    fake.proc(45, "sleep", wchan="hrtimer_nanosleep", runtime_ns=700_000, slices=2, start_ticks=95000)
    old = sampler(fake, clock, gap_clock=clock)
    old.sample()
    clock.t = 103.0
    fake.proc(44, "python3", wchan="hrtimer_nanosleep", runtime_ns=900_000, slices=3, start_ticks=80000)  # a tick
    old.sample()
    kept = old.knowledge()
    assert kept == {"43:900.0": ["timer", False, 100.0], "44:800.0": ["timer", True, None],
                    "45:950.0": ["timer", False, 100.0]}
    # The freeze and thaw; the new agent starts 60 s later. 45's pid now belongs to another process.
    fake.proc(43, "sleep", wchan="do_syscall_64", runtime_ns=800_000, slices=4, start_ticks=90000)
    fake.proc(45, "sleep", wchan="do_syscall_64", runtime_ns=800_000, slices=4, start_ticks=99000)
    clock.t = 163.0
    fresh = sampler(fake, clock, gap_clock=clock)
    # Without what was known: the job's sleep is blocked somewhere (not counted), the daemon's is a first sleep (it is).
    assert fresh.sample().timer_sleep == [("python3", "44", 0.0, 0)]
    new = sampler(fake, clock, gap_clock=clock)
    new.recall(json_round_trip(kept))
    assert sorted(new.sample().timer_sleep) == [("python3", "44", 0.0, 1), ("sleep", "43", 63.0, 0)]


def test_what_a_replacement_is_given_that_makes_no_sense_is_ignored(fake):
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", start_ticks=90000)
    s = sampler(fake)
    s.recall({"43": ["timer", False, 1.0], "43:900.0": "timer", "x:y": [1, 2, 3], "43:abc": ["timer", 0, None]})
    assert s.sample().timer_sleep == [("sleep", "43", 0.0, 0)]


def json_round_trip(d):
    import json
    return json.loads(json.dumps(d))


def _box_cpu(fake, busy_ticks, iowait=0):
    """/proc/stat's first line: user nice system idle iowait irq softirq steal (clock ticks)."""
    with open(os.path.join(fake.root, "stat"), "w") as f:
        f.write(f"cpu  {busy_ticks} 0 0 100000 {iowait} 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\nintr 1 2 3\n")


def test_on_a_quiet_box_a_quick_process_is_read_only_every_slow_walk(fake):
    """The box's CPU counters barely moved since the last tick (under half a candidate's share) and nothing waited
    on the disk: a process that votes nothing by its state cannot have done work, so it is not read; every process
    is read at least every SLOW_WALK seconds, and on any tick where the box did work. What it did meanwhile is
    measured over the whole time since its last read."""
    from wr_agent.host_signals import SLOW_WALK

    clock = Clock(100.0)
    fake.uptime(1000.0)
    fake.pid_namespace(300)
    _box_cpu(fake, 1000)
    fake.proc(47, "python3", wchan="do_select", runtime_ns=9, start_ticks=1000)  # quick: blocked, nothing to vote
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=7, start_ticks=1000)  # a timer sleep: read always
    s = sampler(fake, clock)
    s.sample()
    quick, sleeper = s.procs["47"], s.procs["43"]
    assert quick.quick is not None and sleeper.quick is None

    def tick(t, busy, iowait=0):
        clock.t = t
        _box_cpu(fake, busy, iowait)
        return s.sample()

    sig = tick(101.0, 1001)  # 10 ms in a second: quiet
    assert quick.last == 100.0 and sleeper.last == 101.0  # not read; the sleeper is
    assert sig.candidates == 2 and [t[:2] for t in sig.timer_sleep] == [("sleep", "43")]
    # The sleeper wakes and blocks in select (a nanosecond of CPU: its window opens), read on every tick while it is
    # not quick (a quiet tick walks those that were not quick at the last full read), quick once its window has
    # passed; counted once on every tick, quiet or full, before and after.
    fake.proc(43, "sleep", wchan="do_select", runtime_ns=8, start_ticks=1000)
    skipped_by_its_own_test = 0
    for k in range(56):
        sig = tick(101.25 + k / 4, 1001)
        assert sig.candidates == 2, (101.25 + k / 4, sig.candidates)
        skipped_by_its_own_test += sleeper.quick is not None and sleeper in s._slow_listed
    assert sleeper.quick is not None and sig.timer_sleep == [] and skipped_by_its_own_test
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=7, start_ticks=1000)  # as it was, for what follows
    s.close()
    clock.t = 100.0
    s.sample()
    quick, sleeper = s.procs["47"], s.procs["43"]
    tick(101.0, 1001)
    tick(102.0, 1002)
    assert quick.last == 100.0
    tick(100.0 + SLOW_WALK, 1003)  # every process read within SLOW_WALK of the last full read
    assert quick.last == 100.0 + SLOW_WALK
    tick(104.0, 1004)
    assert quick.last == 100.0 + SLOW_WALK
    # The box did work this tick (1 s of CPU): every process is read, and the one that did it votes.
    fake.proc(47, "python3", state="R", ticks=100, runtime_ns=1_000_000_000, start_ticks=1000)
    sig = tick(105.0, 1104)
    assert quick.last == 105.0 and [c for c, _, _ in sig.cpu] == ["python3"]
    fake.proc(48, "python3", wchan="do_select", runtime_ns=9, start_ticks=1000)
    fake.pid_namespace(301)  # a pid handed out: listed (and read) at once
    for t in (106.0, 107.0, 108.0):
        tick(t, 1104 + int(t) - 105)
    assert s.procs["48"].quick is not None
    tick(109.0, 1108, iowait=3)  # a wait on the disk: read all
    assert s.procs["48"].last == 109.0


def test_a_box_is_quiet_by_its_cpu_since_the_last_walk_not_by_one_tick(fake):
    """A box whose own background comes in bursts (a supervisor's 50 ms now and then) is quiet on average: a quick
    process not read since the last walk would measure its CPU over that whole span, at most the box's, so a tick
    with 50 ms in it does not make every process be read while the span's average stays under the share."""
    clock = Clock(100.0)
    fake.uptime(1000.0)
    fake.pid_namespace(300)
    _box_cpu(fake, 1000)
    fake.proc(47, "python3", wchan="do_select", runtime_ns=9, start_ticks=1000)
    s = sampler(fake, clock)
    s.sample()
    quick = s.procs["47"]

    def tick(t, busy):
        clock.t = t
        _box_cpu(fake, busy)
        s.sample()

    tick(101.0, 1004)  # 40 ms in the first second
    tick(102.0, 1009)  # 50 ms in this one (a tick's share): 90 ms in 2 s, under the span's 100 ms
    assert quick.last == 100.0
    tick(102.5, 1016)  # 160 ms in 2.5 s: over the span's 125 ms, so every process is read
    assert quick.last == 102.5
    tick(103.5, 1020)  # a new span from that walk: 40 ms in a second
    assert quick.last == 102.5


def test_another_namespaces_link_is_never_box_wide_traffic_whatever_its_name(fake):
    """Calico's `cali…` and any veth end have an iflink that is not their own ifindex (the peer lives in a pod's or
    a container's namespace): its traffic is that namespace's, not a box-wide vote. A VLAN's bytes its lower link
    counts already. The interface holding a default route is the box's edge even when it is a veth end (a
    container's own eth0, a test box's)."""
    def link(name, ifindex, iflink):
        fake.iface(name)
        for key, value in (("ifindex", ifindex), ("iflink", iflink)):
            with open(os.path.join(fake.sys_net, name, key), "w") as f:
                f.write(f"{value}\n")

    link("ens3", 2, 2)
    link("cali1a2b3c", 9, 4)  # a pod's veth, host end
    link("ens3.100", 10, 2)  # a VLAN on ens3
    link("eth0", 11, 12)  # a veth end that carries the default route
    with open(os.path.join(fake.root, "net", "route"), "w") as f:
        f.write("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
                "eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                "cali1a2b3c\t0500A8C0\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n")
    names = ("ens3", "cali1a2b3c", "ens3.100", "eth0")
    fake.dev(dict((n, (0, 0)) for n in names))
    s = sampler(fake)
    s.sample()
    fake.dev({"ens3": (1000, 0), "cali1a2b3c": (50000, 50000), "ens3.100": (300, 0), "eth0": (0, 200)})
    assert s.sample().net_bytes == 1200
    assert {n for n, counts in s.if_kind.items() if counts} == {"ens3", "eth0"}


def _psql_waiting(fake, peer):
    """A sampler at 100.0 whose psql (pid 50, its shell waiting for it) waits on `peer`, found at 100.0."""
    fake.proc(40, "bash", wchan="do_wait")
    fake.proc(50, "psql", ppid=40, wchan="unix_stream_read_generic")
    s = sampler(fake, Clock(100.0))
    s.sample()
    p = s.procs["50"]
    s.job_due.clear()  # looked at already (the look's /proc facts are job_wait's tests'): this is the wait it found
    s.job_waits["50"] = (p, [s.job_memory.begin(("50", p.start), peer, 100.0)], s.procs["40"].ran_at)
    return s


def test_a_wait_counted_as_the_servers_is_asked_again_and_stops_when_the_server_waits_for_the_client(fake):
    """psql's query was in the backend's hands when first looked at (its turn: SERVER); every TURN_RECHECK seconds
    the sampler asks again, and once the backend waits to read the connection (a subscriber whose server was busy
    elsewhere, say) the wait stops counting; it counts again if the server takes it up again."""
    from wr_agent import job_wait, peer_turn
    from wr_agent.job_steps import TURN_RECHECK
    from wr_agent.signals import Signals

    s = _psql_waiting(fake, job_wait.Peer("unix", 7, "/tmp/.s.PGSQL.5432", turn=peer_turn.SERVER, server=8))
    turns = [peer_turn.SERVER]
    s._server_turn = lambda inode, table=None: turns[0]

    def votes(t):
        sig = Signals()
        s._job_waits(t, sig)
        return [u[:2] for u in sig.unix]

    assert votes(101.0) == [("psql", "50")]
    turns[0] = peer_turn.CLIENT
    assert votes(100.0 + TURN_RECHECK - 0.5) == [("psql", "50")]  # not asked again yet
    assert votes(100.0 + TURN_RECHECK) == []
    assert votes(100.0 + TURN_RECHECK + 1) == []
    turns[0] = peer_turn.SERVER
    assert votes(100.0 + 2 * TURN_RECHECK + 1) == [("psql", "50")]


@pytest.mark.parametrize(("person", "counts"), [(True, False), (False, True)])
def test_a_persons_wait_asked_again_counts_only_while_the_server_is_known_to_hold_it(fake, person, counts):
    """A query typed at a psql prompt counts while the backend holds it (its turn: SERVER). Asked again, a turn
    that can no longer be told (the backend now waits in poll, say) ends a person's wait, as find_peers would
    never have counted it; a script's step goes on counting, as it would have been counted from the start."""
    from wr_agent import job_wait, peer_turn
    from wr_agent.job_steps import TURN_RECHECK
    from wr_agent.signals import Signals

    s = _psql_waiting(fake, job_wait.Peer("unix", 7, "/tmp/.s.PGSQL.5432", turn=peer_turn.SERVER, server=8,
                                          person=person))
    s._server_turn = lambda inode, table=None: None

    sig = Signals()
    s._job_waits(100.0 + TURN_RECHECK, sig)
    assert bool(sig.unix) is counts, sig.unix


def _retrying_sqlite3(fake, clock, s, n, locks):
    """One tick of sqlite3 (pid 90, its shell 89 waiting for it) in its busy handler's short sleeps: it ran since
    the last tick (a wake), its database open as fd 3; `locks` is /proc/locks as the tick reads it."""
    clock.t = 100.0 + n
    fake.uptime(1000.0 + n)
    fake.proc(90, "sqlite3", ppid=89, wchan="hrtimer_nanosleep", runtime_ns=n + 1, slices=n + 1,
              fds=["/dev/null", "pipe:[7]", "pipe:[7]", fake.db])
    fake._w("locks", locks)
    return s.sample()


def test_a_job_step_retrying_a_file_lock_another_holds_waits_on_the_lock(fake, tmp_path):
    """SQLite's busy handler tries fcntl(F_SETLK) and sleeps 1-100 ms between tries: a timer sleeper that keeps
    waking, as a heartbeat does. Its parent waits for it and another process holds a lock on the file it has open
    (/proc/locks): a lock wait, voted `lock`, until the lock goes (seen within file_locks.RECHECK)."""
    from wr_agent import file_locks

    fake.db = str(tmp_path / "app.db")
    open(fake.db, "w").close()
    st = os.stat(fake.db)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    held = f"1: POSIX  ADVISORY  WRITE 77 {key} 1073741824 1073742335\n"
    mine = f"1: POSIX  ADVISORY  READ  90 {key} 1073741826 1073742335\n"
    other_file = f"1: FLOCK  ADVISORY  WRITE 77 {key.rsplit(':', 1)[0]}:{st.st_ino + 1} 0 EOF\n"
    waiter_line = (f"1: POSIX  ADVISORY  WRITE 77 {key} 1073741824 1073742335\n"
                   f"1: -> POSIX  ADVISORY  READ  90 {key} 0 0\n")
    clock = Clock(100.0)
    fake.uptime(1000.0)
    fake.proc(89, "bash", wchan="do_wait")
    s = sampler(fake, clock)
    assert _retrying_sqlite3(fake, clock, s, 0, held).lock_wait == []  # not yet seen to wake
    sig = _retrying_sqlite3(fake, clock, s, 1, held)
    assert sig.lock_wait == [("sqlite3", "90")]
    assert ("sqlite3", "90", 0.0, 1) in sig.timer_sleep  # by its sleeps alone, a heartbeat
    # The holder commits: within RECHECK the wait is over.
    for n in range(2, 2 + int(file_locks.RECHECK) + 1):
        sig = _retrying_sqlite3(fake, clock, s, n, "")
    assert sig.lock_wait == []
    # Only its own lock on the file, a lock on another file, a waiter's line: no lock another holds.
    for locks in (mine, other_file):
        fresh = sampler(fake, clock)
        _retrying_sqlite3(fake, clock, fresh, 20, locks)
        assert _retrying_sqlite3(fake, clock, fresh, 21, locks).lock_wait == []
    fake._w("locks", waiter_line)
    assert file_locks.held_locks(fake.root) == {
        (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino): {77}}
    # Nobody waits for it (a daemon with its database open, polling): a heartbeat, whatever the locks.
    fake.proc(89, "bash", wchan="do_select")
    fresh = sampler(fake, clock)
    _retrying_sqlite3(fake, clock, fresh, 30, held)
    assert _retrying_sqlite3(fake, clock, fresh, 31, held).lock_wait == []


def _paced_producer(fake, clock, s, n, wchar, out="pipe:[7]", parent_wchan="do_wait"):
    """One tick of a producer (pid 90, its shell 89) that woke from its timer sleep since the last tick (its
    runtime moved) having written `wchar` bytes in all, its output into `out`."""
    clock.t = 100.0 + 4 * n
    fake.uptime(1000.0 + 4 * n)
    fake.proc(89, "sh", wchan=parent_wchan)
    fake.proc(90, "python3", ppid=89, wchan="hrtimer_nanosleep", runtime_ns=n + 1, slices=n + 1,
              fds=["/dev/null", out, "pipe:[8]"], wchar=wchar)
    return s.sample()


def test_a_job_step_pacing_its_output_with_sleeps_is_work_while_its_wakes_write(fake):
    """`producer | gzip` where the producer sleeps 4 s between pages: a timer sleeper that keeps waking, a
    heartbeat by its sleeps alone. Its parent waits for it and each wake writes the page into its pipe: paced work,
    voted `sleep` while its last wake wrote; a wake that wrote nothing (a poller that found nothing new) ends it."""
    clock = Clock(100.0)
    s = sampler(fake, clock)
    assert _paced_producer(fake, clock, s, 0, 0).paced == []  # first look: its first sleep, not yet seen to wake
    assert _paced_producer(fake, clock, s, 1, 100).paced == []  # a wake: now known a step, what it writes from here
    sig = _paced_producer(fake, clock, s, 2, 200)
    assert sig.paced == [("python3", "90")]
    assert ("python3", "90", 0.0, 2) in sig.timer_sleep  # still a heartbeat by its sleeps
    from wr_agent.classifier import Classifier
    busy, reasons = Classifier(hold_seconds=0).step(clock.t, sig)
    assert busy and reasons[0]["class"] == "sleep" and reasons[0]["subject"] == "python3"
    assert _paced_producer(fake, clock, s, 3, 200).paced == []  # this wake wrote nothing
    assert _paced_producer(fake, clock, s, 4, 300).paced == [("python3", "90")]


def test_a_paced_sleeper_writing_to_a_terminal_or_nobody_waits_for_is_a_heartbeat(fake):
    """`watch` writes to its terminal at every wake (a display, judged by the terminal's rules); a daemon that
    logs at every tick has no parent waiting on it. Neither is paced work."""
    for out, parent in (("/dev/pts/3", "do_wait"), ("/dev/null", "do_wait"), ("socket:[9]", "do_wait"),
                        ("pipe:[7]", "do_select"), ("/var/log/app.log", "do_select")):
        clock = Clock(100.0)
        s = sampler(fake, clock)
        votes = [_paced_producer(fake, clock, s, n, 100 * n, out, parent).paced for n in range(5)]
        assert votes == [[]] * 5, (out, parent)
    clock = Clock(100.0)
    s = sampler(fake, clock)
    votes = [_paced_producer(fake, clock, s, n, 100 * n, "/home/dev/export.jsonl").paced for n in range(3)]
    assert votes[2] == [("python3", "90")]  # into a file: the job's output too
