"""Letting go of an idle box where an open session is activity (sessions/idle_release.py): when the agent's
statuses mean the box need not be kept up, after how long, and what the list must say for someone else's use."""

from __future__ import annotations

import asyncio

import pytest
from unit.core.status_factory import busy_dict, status_dict
from workroom.core.host_snapshot import wants_session
from workroom.core.platform_clock import PlatformClock, PlatformRules, PlatformState
from workroom.core.protocol import Status
from workroom.sessions import idle_release
from workroom.sessions.idle_release import IdleRelease, ReleasedWatch

pytestmark = pytest.mark.unit


def status(**changes: object) -> Status:
    return Status.model_validate(busy_dict(**changes))


def test_the_box_is_kept_up_to_the_ceiling_or_in_ask_mode_to_the_questions_deadline() -> None:
    from workroom.core.host_snapshot import kept_until

    advisory = status(ceiling_seconds=3600, awake_seconds=600, ask_at_ceiling=False, prompt_timeout_seconds=900)
    assert kept_until(advisory, 1000.0) == 1000.0 + 3000
    asking = status(ceiling_seconds=3600, awake_seconds=600, ask_at_ceiling=True, prompt_timeout_seconds=900)
    assert kept_until(asking, 1000.0) == 1000.0 + 3000 + 900  # not let go in the second before the question
    asked = status(awake_ceiling_exceeded=True, prompt_pending=True, monotonic=50.0, prompt_deadline=350.0,
                   ask_at_ceiling=True, prompt_timeout_seconds=900)
    assert kept_until(asked, 1000.0) == 1300.0
    unanswered = status(awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_timeout_seconds=900)
    assert kept_until(unanswered, 1000.0) == 1000.0  # the question timed out: nothing keeps it


def test_a_session_is_wanted_only_while_the_agent_means_to_keep_the_box_up() -> None:
    assert wants_session(status())
    assert not wants_session(Status.model_validate(status_dict()))
    assert not wants_session(status(verdict="IDLE", suppressed=True))  # an unanswered prompt, or Let it sleep
    assert not wants_session(status(awake_ceiling_exceeded=True))  # past an advisory ceiling
    assert wants_session(status(awake_ceiling_exceeded=True, prompt_pending=True, prompt_deadline=9e9))
    assert wants_session(status(stalled=True))  # its replacement is the session's business: not let go


def test_idle_is_let_go_after_the_delay_and_never_before_the_agents_first_look(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idle_release, "FIRST_LOOK_SECONDS", 0.3)
    idle = Status.model_validate(status_dict())

    async def go() -> list[float]:
        fired: list[float] = []
        loop = asyncio.get_running_loop()
        release = IdleRelease("ws1", 0.05, lambda: fired.append(loop.time()), clock=loop.time)
        start = loop.time()
        release.link_up()
        release.on_status(idle)
        await asyncio.sleep(0.1)
        release.on_status(status())  # busy again: not let go
        release.on_status(idle)
        await asyncio.sleep(0.5)
        return [t - start for t in fired]

    fired = asyncio.run(go())
    assert len(fired) == 1 and fired[0] >= 0.3


def test_someone_elses_use_is_a_new_run_or_a_last_use_later_than_the_apps_own_echo() -> None:
    rules = PlatformRules(1800, 1800, 600, 60, 3, 180, 600)

    def clock(build: str, last_used: float) -> PlatformClock:
        return PlatformClock(state=PlatformState.RUNNING, said="running", read_at=0, build=build,
                             last_used=last_used)

    async def go() -> tuple[bool, bool, bool]:
        async def read() -> None:
            return None

        watch = ReleasedWatch("ws1", read, rules, released_at=1000.0, run="7", on_clock=lambda c: None,
                              on_stopped=lambda: None, on_used=lambda: None)
        try:
            return (watch.used_by_someone(clock("7", 1000.0 + 170)), watch.used_by_someone(clock("7", 1000.0 + 200)),
                    watch.used_by_someone(clock("8", 900.0)))
        finally:
            watch.stop()

    assert asyncio.run(go()) == (False, True, True)
