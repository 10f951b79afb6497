"""A replacement agent (the frozen or crashed one killed, not handed off) goes on from the ceiling the old one kept:
an unanswered prompt's deadline, a Let it sleep, the busy stretch's start are not reset by the app's repair."""

import json

import pytest
from agentfake import Clock, FakeSampler
from wr_agent import runtime
from wr_agent.agent import Agent
from wr_agent.ceiling import BELOW, PROMPTED, SUPPRESSED
from wr_agent.heartbeat import Heartbeat
from wr_agent.settings import Settings

pytestmark = pytest.mark.unit


def agent_at(tmp_path, clock):
    sampler = FakeSampler()
    agent = Agent(sampler, Settings(100, 50, True), Heartbeat(enabled=False), "w1", "b" * 64, tick_seconds=1,
                  clock=clock, suspend_clock=clock, settings_path=str(tmp_path / "agent.sock.settings"))
    return agent, sampler



def run_busy(agent, sampler, clock, seconds):
    for _ in range(seconds):
        agent.classifier.operations = 1  # an agent-run operation in flight: a BUSY vote every tick
        agent.tick()
        clock.t += 1


def test_a_replacement_goes_on_from_the_kept_prompt(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime, "boot_id", lambda: "boot-1")
    clock = Clock()
    old, sampler = agent_at(tmp_path, clock)
    run_busy(old, sampler, clock, 101)
    assert old.ceiling.state == PROMPTED
    deadline = old.ceiling.prompt_deadline
    kept = json.loads((tmp_path / "agent.sock.ceiling").read_text())
    assert kept["ceiling"]["state"] == PROMPTED and kept["boot_id"] == "boot-1"

    new, sampler2 = agent_at(tmp_path, clock)  # the old one is gone (killed, not handed off)
    new.recall_ceiling()
    assert new.ceiling.state == PROMPTED and new.ceiling.prompt_deadline == deadline
    run_busy(new, sampler2, clock, int(deadline - clock.t) + 1)
    assert new.ceiling.state == SUPPRESSED and not new.published_busy  # at the old deadline, not a new one


def test_a_kept_let_it_sleep_stays_an_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime, "boot_id", lambda: "boot-1")
    clock = Clock()
    old, sampler = agent_at(tmp_path, clock)
    run_busy(old, sampler, clock, 101)
    old.let_sleep()
    run_busy(old, sampler, clock, 1)
    new, sampler2 = agent_at(tmp_path, clock)
    new.recall_ceiling()
    run_busy(new, sampler2, clock, 3)
    assert new.ceiling.state == SUPPRESSED and new.ceiling.let_sleep_asked and not new.published_busy


@pytest.mark.parametrize("kept", [
    {"ceiling": {"state": PROMPTED, "awake_start": 1.0, "prompt_deadline": 9.0}, "boot_id": "another boot"},
    {"ceiling": {"state": "sideways"}, "boot_id": "boot-1"},
    {"ceiling": {"state": PROMPTED, "prompt_deadline": 1e300}, "boot_id": "boot-1"},
    "[1, 2",
])
def test_a_kept_state_from_another_boot_or_damaged_is_not_used(tmp_path, monkeypatch, kept):
    monkeypatch.setattr(runtime, "boot_id", lambda: "boot-1")
    (tmp_path / "agent.sock.ceiling").write_text(kept if isinstance(kept, str) else json.dumps(kept))
    agent, _ = agent_at(tmp_path, Clock())
    agent.recall_ceiling()
    assert agent.ceiling.state == BELOW and agent.ceiling.prompt_deadline is None


def test_a_system_that_names_no_boot_keeps_nothing_across_agents(tmp_path, monkeypatch):
    """Without a boot id (macOS) a kept state could be from before a restart: it is never used."""
    monkeypatch.setattr(runtime, "boot_id", lambda: None)
    clock = Clock()
    old, sampler = agent_at(tmp_path, clock)
    run_busy(old, sampler, clock, 101)
    new, _ = agent_at(tmp_path, clock)
    new.recall_ceiling()
    assert new.ceiling.state == BELOW


class KnowingSampler(FakeSampler):
    """A sampler that knows some waiting jobs (the real one's `knowledge`/`recall`, docs/agent.md)."""

    def __init__(self, known=None):
        super().__init__()
        self.known = dict(known or {})
        self.recalled = None
        self.asked = 0

    def knowledge(self):
        self.asked += 1
        return dict(self.known)

    def recall(self, kept):
        self.recalled = kept


def test_what_the_sampler_knows_of_waiting_jobs_is_kept_as_it_changes_and_given_to_the_next_agent(tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.setattr(runtime, "boot_id", lambda: "boot-1")
    clock = Clock()
    path = tmp_path / "agent.sock.jobs"
    sampler = KnowingSampler({"43:900.0": ["timer", False, 100.0]})
    old = Agent(sampler, Settings(100, 50, True), Heartbeat(enabled=False), "w1", "b" * 64, tick_seconds=1,
                clock=clock, suspend_clock=clock, settings_path=str(tmp_path / "agent.sock.settings"))
    for _ in range(12):
        old.tick()
        clock.t += 1
    assert sampler.asked == 3  # looked at every JOBS_EVERY seconds, not every tick
    kept = json.loads(path.read_text())
    assert kept == {"jobs": {"43:900.0": ["timer", False, 100.0]}, "boot_id": "boot-1"}
    written = path.stat().st_mtime_ns
    for _ in range(6):
        old.tick()
        clock.t += 1
    assert path.stat().st_mtime_ns == written  # unchanged knowledge: not written again
    sampler.known["44:950.0"] = ["wait", False, 110.0]
    for _ in range(6):
        old.tick()
        clock.t += 1
    assert json.loads(path.read_text())["jobs"]["44:950.0"] == ["wait", False, 110.0]

    nxt = KnowingSampler()
    new = Agent(nxt, Settings(100, 50, True), Heartbeat(enabled=False), "w1", "b" * 64, tick_seconds=1,
                clock=clock, suspend_clock=clock, settings_path=str(tmp_path / "agent.sock.settings"))
    new.recall_jobs()
    assert nxt.recalled == json.loads(path.read_text())["jobs"]
    monkeypatch.setattr(runtime, "boot_id", lambda: "boot-2")  # after a reboot, pids and start times mean nothing
    other = KnowingSampler()
    Agent(other, Settings(100, 50, True), Heartbeat(enabled=False), "w1", "b" * 64, tick_seconds=1, clock=clock,
          suspend_clock=clock, settings_path=str(tmp_path / "agent.sock.settings")).recall_jobs()
    assert other.recalled is None
    path.write_text("{not json")  # corrupt: ignored, nothing lost but the memory
    Agent(other, Settings(100, 50, True), Heartbeat(enabled=False), "w1", "b" * 64, tick_seconds=1, clock=clock,
          suspend_clock=clock, settings_path=str(tmp_path / "agent.sock.settings")).recall_jobs()
    assert other.recalled is None
