"""A hand-off (every app update) carries the agent's state into the new process: every attribute of the agent
and of the parts whose `to_state` its `handoff_state` writes comes through the round trip, unless its class
names it in `NOT_HANDED_OFF`. The attributes are read off the objects, never listed here: a pause, an answer
or any state a change adds and the hand-off forgets fails this test instead of being lost at an update."""

import json

import pytest
from agentfake import make_agent
from wr_agent.settings import Settings
from wr_agent.signals import Signals

BUSY = Signals(cpu=[("job", "5", 1.0)])


def handed_off(obj, path=()):
    """{attribute path: value} of everything a hand-off must carry, reading into each part that declares its own
    `NOT_HANDED_OFF` (the ceiling, the classifier, the busy span)."""
    declared = type(obj).NOT_HANDED_OFF
    attributes = vars(obj)
    stale = set(declared) - set(attributes)
    assert not stale, f"{type(obj).__name__}.NOT_HANDED_OFF names what it does not have: {sorted(stale)}"
    carried = {}
    for name, value in attributes.items():
        if name in declared:
            continue
        if hasattr(type(value), "NOT_HANDED_OFF"):
            carried.update(handed_off(value, (*path, name)))
        else:
            carried[(*path, name)] = value
    return carried


def ticks(agent, clock, sampler, signals, count, step=1.0):
    sampler.sig = signals
    for _ in range(count):
        agent.tick()
        clock.t += step


def prompted():
    """Busy past a one-minute ceiling in ask mode: a prompt waits, a busy span runs."""
    agent, sampler, clock = make_agent(Settings(60, 300, True))
    ticks(agent, clock, sampler, BUSY, 70)
    return agent


def let_sleep():
    """The user answered the prompt with "let it sleep"."""
    agent = prompted()
    agent.let_sleep()
    return agent


def told_then_slept():
    """A busy span told when it ended (idle after the hold), then a new one the box slept through."""
    agent, sampler, clock = make_agent(Settings(), hold_seconds=2)
    ticks(agent, clock, sampler, BUSY, 5)
    ticks(agent, clock, sampler, Signals(), 5)
    ticks(agent, clock, sampler, BUSY, 3)
    clock.t += 120  # suspended while busy: a tick gap on the clock that counts suspend
    ticks(agent, clock, sampler, BUSY, 2)
    return agent


LIVED = {"prompted": prompted, "let sleep": let_sleep, "told then slept": told_then_slept}
"""Agents that lived a while; between them every carried attribute is off its fresh value at least once."""


@pytest.mark.parametrize("lived", LIVED)
def test_a_hand_off_carries_every_attribute_not_declared_left_behind(lived: str) -> None:
    agent = LIVED[lived]()
    state = json.loads(json.dumps(agent.handoff_state()))  # the state file is JSON
    new, _, clock = make_agent(Settings())
    clock.t = agent.clock()
    new.restore_state(state)
    before, after = handed_off(agent), handed_off(new)
    lost = {".".join(path): (value, after.get(path)) for path, value in before.items() if after.get(path) != value}
    assert not lost, f"lost at a hand-off (before, after): {lost}"


def test_the_lived_agents_move_every_carried_attribute() -> None:
    """Else the round trip above could not tell a carried attribute from a dropped one: a new attribute no
    lived agent moves fails here until a lived agent moves it (or its class says why it is left behind)."""
    fresh = handed_off(make_agent(Settings())[0])
    lived = [handed_off(make()) for make in LIVED.values()]
    assert all(state.keys() == fresh.keys() for state in lived)
    unmoved = [".".join(path) for path, value in fresh.items() if all(state[path] == value for state in lived)]
    assert not unmoved, f"no lived agent moves these off their fresh values: {unmoved}"
