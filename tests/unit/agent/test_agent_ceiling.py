"""The awake ceiling state machine on a fake clock, and the agent-level wake-gap guarantee."""

import pytest
from agentfake import make_agent
from wr_agent.agent import visible
from wr_agent.ceiling import BELOW, EXCEEDED, PROMPTED, SUPPRESSED, Ceiling
from wr_agent.heartbeat import Heartbeat
from wr_agent.settings import Settings
from wr_agent.signals import Signals

pytestmark = pytest.mark.unit


def test_advisory_exceeded_stays_busy():
    c = Ceiling(Settings(100, 50, False))
    assert c.update(0, True)
    assert c.update(99, True) and c.state == BELOW
    assert c.update(100, True) and c.state == EXCEEDED and c.exceeded
    assert c.update(10000, True)


def test_ask_mode_prompts_once_then_suppresses_at_deadline():
    c = Ceiling(Settings(100, 50, True))
    c.update(0, True)
    assert c.update(100, True) and c.state == PROMPTED and c.prompt_deadline == 150
    assert c.prompt_seq == 1
    assert c.update(149, True) and c.prompt_seq == 1
    assert not c.update(150, True) and c.state == SUPPRESSED
    assert not c.update(500, True) and c.prompt_seq == 1


def test_idle_resets_and_next_crossing_prompts_again():
    c = Ceiling(Settings(100, 50, True))
    c.update(0, True)
    c.update(200, True)
    assert not c.update(201, False) and c.state == BELOW and c.awake_start is None
    c.update(300, True)
    c.update(400, True)
    assert c.prompt_seq == 2


def test_keep_restarts_the_ceiling():
    c = Ceiling(Settings(100, 50, True))
    c.update(0, True)
    c.update(200, True)
    c.update(250, True)
    assert c.suppressed
    c.keep(260)
    assert c.update(261, True) and c.state == BELOW and c.awake_seconds(261) == 1
    assert c.update(360, True) and c.state == PROMPTED


def test_same_settings_change_nothing_even_when_suppressed():
    c = Ceiling(Settings(100, 50, True))
    c.update(0, True)
    c.update(200, True)
    c.update(250, True)
    c.apply_settings(251, Settings(100, 50, True))  # every app connect sends its settings
    assert c.suppressed and not c.update(252, True)


def test_changed_settings_reevaluate():
    c = Ceiling(Settings(100, 50, True))
    c.update(0, True)
    c.update(200, True)
    c.apply_settings(201, Settings(100, 50, False))  # ask off: advisory
    assert c.state == EXCEEDED and c.update(202, True)
    c.apply_settings(203, Settings(100, 50, True))  # ask on again past the ceiling: a new prompt
    assert c.state == PROMPTED and c.prompt_deadline == 253
    c.apply_settings(204, Settings(1000, 50, True))  # raised above the awake time
    assert c.state == BELOW


def test_a_sleep_ends_the_span_and_work_after_the_wake_gets_a_fresh_ceiling_and_prompt():
    """Suppressed by an unanswered prompt, the box sleeps; after the wake (a tick gap), work is a new span: the
    ceiling counts from the wake, the verdict is BUSY again (the box is kept awake), and past the ceiling a fresh
    prompt comes. The app connecting and sending the same settings resets nothing. (A job let sleep 26 s into a
    new `sleep 200 && ...` after such a wake, with "busy for 3 min 47 s" counting the time asleep, before.)"""
    agent, sampler, clock = make_agent(Settings(60, 30, True))
    sampler.sig = Signals(cpu=[("job", "5", 1.0)])
    for _ in range(100):
        agent.tick()
        clock.t += 1
    st = agent.status()
    assert st["suppressed"] and st["verdict"] == "IDLE" and st["classifier_verdict"] == "BUSY"
    for _ in range(3):  # the app connecting sends the same settings: nothing changes
        agent.apply_settings({"ceiling_seconds": 60, "prompt_timeout_seconds": 30, "ask_at_ceiling": True})
        agent.tick()
        clock.t += 1
        assert agent.status()["suppressed"]
    clock.t += 3600  # asleep: no ticks
    woke = clock.t
    for _ in range(6):
        agent.tick()
        agent.apply_settings({"ceiling_seconds": 60, "prompt_timeout_seconds": 30, "ask_at_ceiling": True})
        st = agent.status()
        assert not st["suppressed"] and st["verdict"] == "BUSY" and not st["awake_ceiling_exceeded"]
        assert st["awake_seconds"] <= clock.t - woke + 1e-9
        clock.t += 1
    assert agent.ceiling.prompt_seq == 1
    while clock.t - woke < 61:
        agent.tick()
        clock.t += 1
    assert agent.status()["prompt_pending"] and agent.ceiling.prompt_seq == 2  # a fresh prompt for the new span


def test_prompt_deadline_armed_without_clients_and_visible_in_first_status():
    agent, sampler, clock = make_agent(Settings(60, 30, True))
    sampler.sig = Signals(timer_sleep=[("sleep", "8")])
    for _ in range(61):
        agent.tick()
        clock.t += 1
    st = agent.status()
    assert st["prompt_pending"] and st["prompt_deadline"] == pytest.approx(1060 + 30)
    ev = agent.prompt_event()
    assert ev["event"] == "awake_ceiling_prompt" and ev["workroom"] == "w1"
    for _ in range(40):  # ticking on, nobody connected (a 40 s jump would be the box asleep: a new span)
        clock.t += 1
        agent.tick()
    assert agent.status()["suppressed"]


def test_stalled_is_computed_from_the_last_tick():
    agent, _, clock = make_agent(Settings())
    agent.tick()
    clock.t += 29
    assert not agent.status()["stalled"]
    clock.t += 2
    assert agent.status()["stalled"]


def test_visible_ignores_clock_fields():
    agent, sampler, clock = make_agent(Settings())
    sampler.sig = Signals(timer_sleep=[("sleep", "8")])
    agent.tick()
    a = agent.status()
    clock.t += 5
    agent.tick()
    agent.heartbeat.last_sent = clock.t
    b = agent.status()
    assert a["monotonic"] != b["monotonic"] and a["awake_seconds"] != b["awake_seconds"]
    assert visible(a) == visible(b)
    sampler.sig = Signals(timer_sleep=[("sleep", "9")])
    agent.tick()
    assert visible(agent.status()) != visible(b)


def test_handoff_state_round_trip_keeps_awake_clock_and_prompt():
    agent, sampler, clock = make_agent(Settings(60, 300, True))
    sampler.sig = Signals(cpu=[("job", "5", 1.0)])
    for _ in range(70):
        agent.tick()
        clock.t += 1
    state = agent.handoff_state()
    new, _, clock2 = make_agent(Settings())
    clock2.t = clock.t
    new.restore_state(state)
    st = new.status()
    assert st["prompt_pending"] and st["ceiling_seconds"] == 60 and st["verdict"] == "BUSY"
    assert st["awake_seconds"] == pytest.approx(70)
    with pytest.raises(ValueError):
        new.restore_state({"settings": state["settings"], "ceiling": {"state": "weird"}})


def test_let_sleep_suppresses_at_once_and_holds_until_idle_or_keep():
    c = Ceiling(Settings(100, 50, True))
    c.update(0, True)
    assert c.update(100, True) and c.state == PROMPTED
    c.let_sleep(101)
    assert not c.update(101, True) and c.state == SUPPRESSED and c.prompt_deadline is None
    assert c.let_sleep_asked and c.prompt_seq == 1
    assert not c.update(10000, True)  # no new prompt while the answer stands
    c.apply_settings(10001, Settings(100, 50, False))  # a settings change does not undo the answer
    assert c.suppressed and not c.update(10002, True)
    c.keep(10003)
    assert c.update(10004, True) and c.state == BELOW and not c.let_sleep_asked
    c.let_sleep(10005)
    assert not c.update(10006, True)
    assert not c.update(10007, False) and c.state == BELOW and not c.let_sleep_asked


def test_let_sleep_while_idle_changes_nothing():
    c = Ceiling(Settings(100, 50, True))
    c.let_sleep(5)
    assert c.state == BELOW and not c.let_sleep_asked
    assert c.update(6, True) and c.state == BELOW


class CountingHeartbeat(Heartbeat):
    """The real heartbeat's schedule, with the datagram counted instead of sent."""

    def _send(self, now):
        self.last_sent, self.error, self.sent = now, None, self.sent + 1
        self.next_due = now + self.interval


def test_let_sleep_publishes_idle_and_stops_the_heartbeat_on_the_next_tick():
    agent, sampler, clock = make_agent(Settings(60, 600, True))
    agent.heartbeat = CountingHeartbeat(interval=5, tick_seconds=1)
    sampler.sig = Signals(cpu=[("job", "5", 1.0)])
    for _ in range(62):
        agent.tick()
        clock.t += 1
    st = agent.status()
    assert st["prompt_pending"] and st["verdict"] == "BUSY" and not st["let_sleep"]
    sent = agent.heartbeat.sent
    st = agent.let_sleep()
    assert st["verdict"] == "IDLE" and st["suppressed"] and st["let_sleep"] and not st["prompt_pending"]
    assert st["classifier_verdict"] == "BUSY" and not st["asserting"]
    for _ in range(30):  # the prompt timeout (600 s) is far away: the answer, not the timeout, stops it
        agent.tick()
        clock.t += 1
    assert agent.heartbeat.sent == sent and agent.status()["verdict"] == "IDLE"


def test_let_sleep_survives_a_handoff():
    agent, sampler, clock = make_agent(Settings(60, 600, True))
    sampler.sig = Signals(cpu=[("job", "5", 1.0)])
    for _ in range(62):
        agent.tick()
        clock.t += 1
    agent.let_sleep()
    state = agent.handoff_state()
    new, sampler2, clock2 = make_agent(Settings())
    clock2.t = clock.t
    new.restore_state(state)
    sampler2.sig = sampler.sig
    new.tick()
    st = new.status()
    assert st["suppressed"] and st["let_sleep"] and st["verdict"] == "IDLE"


def test_busy_seconds_count_the_work_keep_does_not_restart_them_and_sleep_is_not_counted():
    """`awake_seconds` is the ceiling's clock, which keep restarts; `busy_seconds` is how long this stretch of
    work has gone on, less the time the box slept (the app's "Busy for": docs/ui.md); only an IDLE ends it."""
    agent, sampler, clock = make_agent(Settings(60, 300, True))
    assert agent.status()["busy_seconds"] is None
    sampler.sig = Signals(cpu=[("job", "5", 1.0)])
    agent.tick()
    for _ in range(70):
        clock.t += 1
        agent.tick()
    kept = agent.keep()
    assert kept["awake_seconds"] == pytest.approx(0) and kept["busy_seconds"] == pytest.approx(70)
    clock.t += 13  # the box was frozen: no tick for 13 s
    agent.tick()
    assert agent.status()["busy_seconds"] == pytest.approx(71)
    assert agent.status()["awake_seconds"] == pytest.approx(13)  # the ceiling's clock runs on, as before
    state = agent.handoff_state()
    new, _, clock2 = make_agent(Settings())
    clock2.t = clock.t
    new.restore_state(state)
    assert new.status()["busy_seconds"] == pytest.approx(71)
    sampler.sig = Signals()
    for _ in range(40):  # past the hold
        clock.t += 1
        agent.tick()
    assert agent.status()["busy_seconds"] is None
