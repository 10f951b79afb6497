"""Policy P4 on a fake clock: each signal, the hold, and the resume mask after a tick gap.

Reasons are compared as the text `busy_reasons` carries (that text is part of the wire and must not change);
their data form (`structured_reasons`) has its own tests below.
"""

import json

import pytest
from wr_agent import reasons as R
from wr_agent.classifier import Classifier
from wr_agent.signals import Signals

pytestmark = pytest.mark.unit


def run(c, t, **sig):
    busy, reasons = c.step(t, Signals(**sig))
    return busy, [R.text(r) for r in reasons]


def test_idle_without_signals():
    assert run(Classifier(), 0.0) == (False, [])


@pytest.mark.parametrize("sig, reason", [
    ({"cpu": [("cargo", "4121", 0.5)]}, "cpu: cargo (pid 4121)"),
    ({"dstate": [("dd", "7")]}, "disk: dd (pid 7) in D state"),
    ({"timer_sleep": [("sleep", "77")]}, "sleep: sleep (pid 77)"),
    ({"tcp": [("curl", "9")]}, "tcp: curl (pid 9)"),
    ({"keystroke_age": 3.0}, "tty: keystroke"),
    ({"tty_bytes": 1000}, "tty: output"),
])
def test_each_signal_votes_busy(sig, reason):
    busy, reasons = run(Classifier(), 0.0, **sig)
    assert busy and reasons == [reason]


def test_below_thresholds_is_idle():
    c = Classifier()
    assert not run(c, 0.0, keystroke_age=10.5)[0]
    assert not run(c, 1.0, tty_bytes=999)[0]
    assert not run(c, 2.0, net_bytes=1400)[0]


def test_network_traffic_votes_as_a_flow_and_a_burst_however_big_does_not():
    c = Classifier(hold_seconds=0)
    assert [run(c, float(t), net_bytes=600)[0] for t in range(4)] == [False, False, True, True]
    c = Classifier(hold_seconds=0)  # a notebook's poll through a tunnel: one big burst every 10 s
    votes = [run(c, float(t), net_bytes=200_000 if t % 10 == 0 else 40)[0] for t in range(40)]
    assert not any(votes)
    c = Classifier(hold_seconds=0)  # a burst over two ticks, still no flow
    assert not any(run(c, float(t), net_bytes=50_000 if t % 10 in (0, 1) else 0)[0] for t in range(40))


def test_rates_are_windowed():
    c = Classifier(hold_seconds=0)
    for t in range(5):  # 250 B/s of pty output for 5 s
        busy, _ = run(c, float(t), tty_bytes=250)
    assert busy
    c = Classifier(hold_seconds=0)
    for t in range(10):  # 150 B/s is under 200
        busy, _ = run(c, float(t), tty_bytes=150)
    assert not busy


def test_agent_operation_in_flight_is_busy():
    c = Classifier()
    c.operations = 1
    assert run(c, 0.0) == (True, ["agent: operation in flight"])


def test_hold_keeps_busy_for_hold_seconds_then_idle():
    c = Classifier(hold_seconds=30)
    run(c, 0.0, cpu=[("cc1", "5", 1.0)])
    busy, reasons = run(c, 29.0)
    assert busy and reasons == ["hold: after cpu: cc1 (pid 5)"]
    assert c.hold_until() == 30.0
    assert run(c, 30.0) == (False, [])


def test_gap_masks_cpu_and_net_but_not_sleep():
    c = Classifier(hold_seconds=30, tick_seconds=1)
    run(c, 0.0)
    busy, _ = run(c, 100.0, cpu=[("x", "1", 1.0)], net_bytes=10 ** 6)
    assert not busy  # the box just woke: its own CPU/net are not work
    assert run(c, 101.0, timer_sleep=[("sleep", "2")])[0]
    assert run(c, 104.5, net_bytes=0) == (True, ["hold: after sleep: sleep (pid 2)"])
    c2 = Classifier()
    run(c2, 0.0)
    run(c2, 100.0)
    assert run(c2, 104.1, cpu=[("x", "1", 1.0)])[0]  # mask over after 3 s + 1 tick


def test_busy_verdict_survives_the_mask_after_a_gap():
    """A wake must not flip a BUSY box to IDLE before the mask ends (it would reset the ceiling)."""
    c = Classifier(hold_seconds=30, tick_seconds=1)
    run(c, 0.0, cpu=[("job", "3", 1.0)])
    busy, reasons = run(c, 200.0, cpu=[("job", "3", 1.0)])
    assert busy and reasons == ["resume: measuring after a wake"]
    assert run(c, 203.0, cpu=[("job", "3", 1.0)])[0]
    assert run(c, 204.5, cpu=[("job", "3", 1.0)]) == (True, ["cpu: job (pid 3)"])


def test_coarse_reasons_say_so():
    assert run(Classifier(), 0.0, cpu=[("cc", "4", 1.0)], coarse=True)[1] == ["cpu: cc (pid 4) (coarse)"]


def test_state_round_trip():
    c = Classifier()
    run(c, 10.0, tcp=[("curl", "9")])
    d = Classifier()
    d.restore(c.to_state())
    assert d.busy and d.hold_until() == 40.0
    assert run(d, 20.0)[0]
    with pytest.raises(ValueError):
        Classifier().restore({"last_busy": "soon"})


def test_last_gap_says_when_the_box_slept_and_whether_it_was_busy():
    c = Classifier(hold_seconds=30, tick_seconds=1)
    run(c, 0.0)
    assert c.last_gap is None
    run(c, 1.0, cpu=[("job", "3", 1.0)])
    run(c, 2.0, cpu=[("job", "3", 1.0)])
    run(c, 95.0)
    assert c.last_gap == (95.0, 93.0, True)
    assert not run(c, 100.0)[0]  # the mask is over and the hold long gone: idle
    run(c, 200.0)
    assert c.last_gap == (200.0, 100.0, False)


def test_a_daemons_short_timer_sleep_is_not_work_a_long_one_is():
    """`time.sleep(1)` heartbeats never reach the minimum sleep; a job's `sleep 5` does, every cycle."""
    c = Classifier(hold_seconds=0)
    assert run(c, 0.0, timer_sleep=[("python3", "5", 0.4, 0)]) == (False, [])
    assert run(c, 1.0, timer_sleep=[("sleep", "6", 3.0, 0)]) == (True, ["sleep: sleep (pid 6)"])


def test_a_process_that_keeps_waking_from_timer_sleeps_is_ticking():
    """`time.sleep(10)` between 50 ms checks: long sleeps, but the same process wakes and sleeps again."""
    c = Classifier(hold_seconds=0)
    assert run(c, 0.0, timer_sleep=[("python3", "5", 8.0, 1)]) == (False, [])


def test_loop_of_short_sleeps_stays_busy_through_the_hold():
    """`until test -f done; do sleep 5; done`: each `sleep 5` child votes in its last 2 s; a 10 s hold
    bridges the gaps, so the verdict never drops."""
    c = Classifier(hold_seconds=10)
    verdicts = [run(c, float(t), timer_sleep=[("sleep", str(100 + t // 5), float(t % 5), 0)])[0]
                for t in range(3, 60)]
    assert all(verdicts)


def test_fifo_open_waiting_for_its_partner_is_work():
    busy, reasons = run(Classifier(), 0.0, fifo_wait=[("tee", "8")])
    assert busy and reasons == ["fifo: tee (pid 8) waiting for its partner"]


def test_reasons_are_data_beside_their_text():
    c = Classifier()
    _, reasons = c.step(0.0, Signals(cpu=[("cc1", "5", 1.0)], tcp=[("curl", "9", {"peer": "10.0.0.5", "port": 443,
                                                                                   "since": 12.5, "unacked": 3})]))
    assert reasons[0] == {"class": "cpu", "subject": "cc1", "pid": 5, "detail": {}}
    # Only the row's own facts reach the wire: a passing figure (unacked) would change from tick to tick.
    assert reasons[1] == {"class": "tcp", "subject": "curl", "pid": 9,
                          "detail": {"peer": "10.0.0.5", "port": 443, "since": 12.5}}
    assert R.text(reasons[1]) == "tcp: curl (pid 9)"
    _, held = c.step(29.0, Signals())
    assert held == [{"class": "hold", "subject": "", "pid": None, "detail": {"after": reasons[0]}}]
    _, coarse = Classifier().step(0.0, Signals(dstate=[("dd", "7")], coarse=True))
    assert coarse[0]["detail"] == {"coarse": True} and R.text(coarse[0]) == "disk: dd (pid 7) in D state (coarse)"


def test_more_than_eight_reasons_end_in_a_count():
    busy, texts = run(Classifier(), 0.0, cpu=[(f"job{i}", str(i), 1.0 - i / 100) for i in range(11)])
    assert busy and len(texts) == 9 and texts[-1] == "+3 more"


def test_a_hand_off_keeps_the_reasons_as_data_and_reads_an_older_agents_text():
    c = Classifier()
    c.step(10.0, Signals(cpu=[("cc1", "5", 1.0)]))
    d = Classifier()
    d.restore(json.loads(json.dumps(c.to_state())))  # the state file is JSON
    assert [R.text(r) for r in d.reasons] == ["hold: after cpu: cc1 (pid 5)"]
    older = Classifier()
    older.restore({"last_busy": 10.0, "busy": True, "last_busy_reasons": ["cpu: cc1 (pid 5)"]})
    assert [R.text(r) for r in older.reasons] == ["hold: after restored"]
    for bad in ([{"class": "teleport"}], [{"class": "cpu", "pid": "5"}], [{"class": "hold", "detail": {}}], "x"):
        with pytest.raises(ValueError):
            Classifier().restore({"last_busy": 10.0, "busy": True, "last_busy_reasons": bad})


def test_a_suspend_is_a_gap_on_the_clock_that_counts_it_though_monotonic_time_barely_moved():
    """CLOCK_MONOTONIC stops while a guest is suspended: an hour asleep is one second on it. The gap is
    measured on the suspend-aware clock (clocks.suspend_aware, injected here: a real suspend cannot run)."""
    boot = [0.0]
    c = Classifier(hold_seconds=30, tick_seconds=1, gap_clock=lambda: boot[0])
    for t in range(3):
        boot[0] = float(t)
        run(c, float(t), cpu=[("job", "3", 1.0)])
    boot[0] = 3602.0  # the box slept an hour between two ticks
    busy, reasons = run(c, 3.0, cpu=[("job", "3", 1.0)])
    assert c.last_gap == (3.0, 3600.0, True)
    assert busy and reasons == ["hold: after cpu: job (pid 3)"], "CPU right after the wake is masked"
    plain = Classifier(hold_seconds=30, tick_seconds=1, gap_clock=lambda: 5.0)
    run(plain, 0.0)
    run(plain, 100.0)
    assert plain.last_gap is None, "no gap on the suspend-aware clock, none recorded"


def test_the_agent_measures_gaps_on_the_suspend_aware_clock():
    from wr_agent import clocks
    from wr_agent.agent import Agent
    from wr_agent.heartbeat import Heartbeat
    from wr_agent.settings import Settings

    class Quiet:
        name, tcp_kind = "proc", None

        def sample(self, busy_hint=False):
            from wr_agent.signals import Signals
            return Signals()

        def close(self):
            pass

    agent = Agent(Quiet(), Settings(14400, 600, False), Heartbeat(enabled=False), "w", "b" * 64)
    assert agent.classifier.gap_clock is clocks.suspend_aware
    assert clocks.SUSPEND_CLOCK_NAME == "boottime"  # Linux: CLOCK_BOOTTIME
