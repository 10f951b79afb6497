"""A fresh agent says it is still checking until its first look at the box is done (docs/protocol.md, `checking`):
the app then shows "Checking…", never "Idle", for a replaced agent that has not yet seen the job."""

import pytest
from agentfake import make_agent
from wr_agent.agent import CHECKING_TICKS, visible
from wr_agent.settings import Settings
from wr_agent.signals import Signals

pytestmark = pytest.mark.unit


def test_checking_until_the_first_look_is_done_then_one_change_seen():
    agent, sampler, clock = make_agent(Settings())
    sampler.sig = Signals()
    assert agent.status()["checking"] is True  # not a tick yet
    seen = [visible(agent.status())]
    for _ in range(CHECKING_TICKS + 2):
        clock.t += 1
        agent.tick()
        v = visible(agent.status())
        if v != seen[-1]:
            seen.append(v)
    assert agent.status()["checking"] is False and agent.status()["verdict"] == "IDLE"
    assert [v["checking"] for v in seen] == [True, False]  # one event: the flip
    assert CHECKING_TICKS >= 4  # the first listing, then a found timer sleep's 3 s at one tick a second


def test_a_replacement_checks_again_and_a_busy_job_is_busy_at_once():
    agent, sampler, clock = make_agent(Settings())
    sampler.sig = Signals(cpu=[("make", "7", 1.0)])
    clock.t += 1
    agent.tick()
    status = agent.status()
    assert status["checking"] is True and status["verdict"] == "BUSY"  # what it sees already counts
