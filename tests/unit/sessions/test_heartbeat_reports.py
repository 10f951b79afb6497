"""Is the agent ticking? The watch on its heartbeat reports (sessions/heartbeat_reports.py), on a real asyncio loop
with a fake clock for "now" and short intervals for the timer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from unit.core.status_factory import busy_dict, status_dict
from workroom.core.heartbeat_proof import margin_for
from workroom.core.protocol import Status
from workroom.core.traits import BOXD_TRAITS, REQUEST_METERED_TRAITS, SSH_TRAITS
from workroom.sessions.heartbeat_reports import HeartbeatReports, reports_expected

pytestmark = pytest.mark.unit
INTERVAL = 0.2


def busy(sent: int | None, **changes: Any) -> Status:
    keep = {"last_sent": None, "error": None, "target": "10.0.0.1:9", "interval_seconds": INTERVAL,
            "enabled": True, "sent": sent}
    return Status.model_validate(busy_dict(keep_awake=keep, **changes))


def test_reports_are_expected_only_while_the_agents_heartbeat_keeps_a_busy_box_awake() -> None:
    assert reports_expected(busy(3), BOXD_TRAITS) == INTERVAL
    assert reports_expected(busy(3), SSH_TRAITS) is None  # nothing to keep awake
    assert reports_expected(busy(3), REQUEST_METERED_TRAITS) is None  # kept awake by this computer, not the agent
    assert reports_expected(busy(None), BOXD_TRAITS) is None  # an older agent reports no count
    assert reports_expected(busy(3, asserting=False), BOXD_TRAITS) is None
    assert reports_expected(Status.model_validate(status_dict()), BOXD_TRAITS) is None  # idle: no heartbeat


def test_a_silent_agent_is_overdue_after_one_interval_plus_the_margin_and_a_report_clears_it() -> None:
    fired: list[float] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        reports = HeartbeatReports(BOXD_TRAITS, fired.append, clock=loop.time)
        assert reports.on_status(busy(1)) is False  # the first status starts the expectation; it is no report
        started = loop.time()
        assert reports.on_status(busy(2)) is True  # the count moved: a heartbeat just sent
        await asyncio.sleep(INTERVAL * 0.8)
        assert reports.on_status(busy(3)) is True and not fired
        reported = loop.time()
        await asyncio.sleep(INTERVAL + margin_for(INTERVAL) + 0.2)
        assert fired == [pytest.approx(reported, abs=0.05)] and reports.overdue
        assert loop.time() - started > INTERVAL + margin_for(INTERVAL)
        assert reports.on_status(busy(3)) is False and reports.overdue  # the same count is no report
        assert reports.on_status(busy(4)) is True and not reports.overdue
        reports.stop()

    asyncio.run(scenario())
    assert len(fired) == 1  # once per silence


def test_a_box_that_goes_idle_expects_no_more_reports() -> None:
    fired: list[float] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        reports = HeartbeatReports(BOXD_TRAITS, fired.append, clock=loop.time)
        reports.on_status(busy(1))
        reports.on_status(Status.model_validate(status_dict()))
        await asyncio.sleep(INTERVAL + margin_for(INTERVAL) + 0.2)
        reports.stop()

    asyncio.run(scenario())
    assert fired == []
