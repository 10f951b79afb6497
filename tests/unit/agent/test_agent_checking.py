"""A fresh agent says until when it is still checking (docs/protocol.md, `checking_until`): the app then shows
"Checking…", never "Idle", for a replaced agent that has not yet judged the job. The value is the same in every
status of one process, so the end of checking pushes no event (on a network-metered box our own bytes would move
its idle clock)."""

import pytest
from agentfake import make_agent
from wr_agent.agent import CHECKING_SECONDS, visible
from wr_agent.classifier import TIMER_MIN_SLEEP
from wr_agent.job_wait import WAIT_MIN
from wr_agent.settings import Settings
from wr_agent.signals import Signals

pytestmark = pytest.mark.unit


def test_checking_until_is_fixed_and_its_end_pushes_nothing():
    agent, sampler, clock = make_agent(Settings())
    sampler.sig = Signals()
    first = agent.status()
    assert first["checking_until"] == pytest.approx(agent.started + CHECKING_SECONDS)
    assert max(WAIT_MIN, TIMER_MIN_SLEEP) < CHECKING_SECONDS  # a found block's and a found sleep's time to count
    seen = [visible(first)]
    for _ in range(int(CHECKING_SECONDS) + 3):
        clock.t += 1
        agent.tick()
        status = agent.status()
        assert status["checking_until"] == first["checking_until"]
        if visible(status) != seen[-1]:
            seen.append(visible(status))
    assert len(seen) == 1 and status["verdict"] == "IDLE"  # idle all along, and nothing to push


def test_what_a_fresh_agent_sees_at_once_counts_at_once():
    agent, sampler, clock = make_agent(Settings())
    sampler.sig = Signals(cpu=[("make", "7", 1.0)])
    clock.t += 1
    agent.tick()
    status = agent.status()
    assert status["monotonic"] < status["checking_until"] and status["verdict"] == "BUSY"
