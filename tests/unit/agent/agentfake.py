"""A real `Agent` on a fake clock and a sampler that returns whatever signals a test sets."""

from wr_agent.agent import Agent
from wr_agent.heartbeat import Heartbeat
from wr_agent.signals import Signals


class FakeSampler:
    name = "proc"
    tcp_kind = "sock_diag"

    def __init__(self):
        self.sig = Signals()

    def sample(self, busy_hint=False):
        return self.sig

    def close(self):
        pass


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def make_agent(settings, hold_seconds=30):
    clock, sampler = Clock(), FakeSampler()
    agent = Agent(sampler, settings, Heartbeat(enabled=False), "w1", "b" * 64, hold_seconds=hold_seconds,
                  tick_seconds=1, clock=clock, suspend_clock=clock)
    return agent, sampler, clock
