"""ProcSampler on /proc-shaped snapshot trees: candidates, signals, incremental reads."""

import os

import pytest
from procfake import FakeProc
from wr_agent.proc_sampler import PF_KTHREAD, ProcSampler

pytestmark = pytest.mark.unit


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
    return ProcSampler(root=fake.root, sys_net=fake.sys_net, pts=fake.pts, clock=clock or Clock(),
                       wall=lambda: 5000.0, **kw)


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
    assert sorted(sig.timer_sleep) == [("python3", "31"), ("sleep", "30")]


def test_cpu_share_between_ticks_from_schedstat(fake):
    clock = Clock(100.0)
    fake.uptime(1000.0)
    fake.proc(40, "cargo", ticks=0, runtime_ns=0, start_ticks=0)  # old process, never ran
    s = sampler(fake, clock)
    assert s.sample().cpu == []
    clock.t = 101.0
    fake.proc(40, "cargo", state="R", ticks=10, runtime_ns=100_000_000)  # 0.1 s over 1 s
    sig = s.sample()
    assert [(c, p) for c, p, _ in sig.cpu] == [("cargo", "40")]
    assert sig.cpu[0][2] == pytest.approx(0.1)
    clock.t = 102.0
    fake.proc(40, "cargo", state="R", ticks=11, runtime_ns=120_000_000)  # 0.02 s: under 0.05
    assert s.sample().cpu == []


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


def test_leader_that_did_not_run_is_not_reread(fake):
    """A sleeping leader whose runtime is unchanged keeps its cached state: stat/wchan are not read."""
    clock = Clock(100.0)
    fake.proc(43, "sleep", wchan="hrtimer_nanosleep", runtime_ns=7)
    s = sampler(fake, clock)
    assert s.sample().timer_sleep == [("sleep", "43")]
    # Change wchan on disk without changing runtime: the cached answer stands (proves no re-read).
    with open(os.path.join(fake.root, "43", "wchan"), "w") as f:
        f.write("pipe_read")
    clock.t = 101.0
    assert s.sample().timer_sleep == [("sleep", "43")]
    fake.proc(43, "sleep", wchan="pipe_read", runtime_ns=9)  # it ran: looked at again
    clock.t = 102.0
    assert s.sample().timer_sleep == []


def test_gone_process_is_dropped_and_its_fds_closed(fake):
    fake.proc(44, "make", state="D")
    s = sampler(fake)
    s.sample()
    held = s.fds_held
    assert held > 0 and "44" in s.procs
    fake.remove(44)
    assert s.sample().dstate == []
    assert "44" not in s.procs and s.fds_held == 0


def test_established_tcp_owned_by_a_candidate(fake):
    fake.proc(50, "curl", fds=["/dev/null", "socket:[7001]"])
    fake.proc(51, "sshd", fds=["socket:[7002]"])
    fake.tcp([("01", "7001"), ("01", "7002"), ("0A", "7003")])
    sig = sampler(fake).sample()
    assert sig.tcp == [("curl", "50")]


def test_tcp_lookup_skipped_when_already_busy_and_cached_after(fake):
    fake.proc(52, "curl", fds=["socket:[8001]"])
    fake.tcp([("01", "8001")], name="tcp6")
    s = sampler(fake)
    assert s.sample(busy_hint=True).tcp == []
    assert s.sample().tcp == [("curl", "52")]
    os.unlink(os.path.join(fake.root, "52", "fd", "0"))  # cached owner: no fd re-scan needed
    assert s.sample().tcp == [("curl", "52")]
    fake.tcp([], name="tcp6")
    assert s.sample().tcp == []


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


def test_keystroke_age_from_pty_atime(fake):
    fake.pty(0, 4000.0)
    fake.pty(3, 4995.0)
    assert sampler(fake).sample().keystroke_age == pytest.approx(5.0)


def test_tty_output_bytes_from_wchar(fake):
    clock = Clock(100.0)
    fake.proc(60, "make", fds=["/dev/pts/0", "/dev/pts/0"], wchar=100, runtime_ns=1)
    s = sampler(fake, clock)
    s.sample()
    fake.proc(60, "make", wchar=1100, runtime_ns=2)
    clock.t = 101.0
    assert s.sample().tty_bytes == 1000


def test_candidates_user_only_counts_own_uid(fake):
    fake.proc(70, "make", state="D")
    fake.proc(71, "make", state="D")
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a snapshot dir to another uid")
    os.chown(os.path.join(fake.root, "71"), 65534, 65534)
    sig = sampler(fake, only_uid=os.getuid()).sample()
    assert sig.dstate == [("make", "70")]


def test_live_proc_parses():
    """A live /proc read through the same code: at least this test process is a candidate."""
    s = ProcSampler(self_pid=1)
    sig = s.sample()
    s.close()
    assert sig.candidates >= 1
