"""`workroom status` without the app prints its lines in the hosts' order, as the app's are, while the hosts are known
within a short grace; a host still waiting then comes after, when it is known, holding nobody's line
(cli/reach.in_order; tests/integration/engine/test_status_each_on_its_deadline.py runs it against a mute host)."""

from __future__ import annotations

import asyncio
import time

import pytest
from workroom.cli.reach import in_order

pytestmark = pytest.mark.unit


async def _after(seconds: float, name: str) -> str:
    await asyncio.sleep(seconds)
    return name


def _run(delays: dict[str, float], grace: float) -> list[tuple[str, float]]:
    async def go() -> list[tuple[str, float]]:
        start = time.monotonic()
        tasks = [asyncio.ensure_future(_after(d, n)) for n, d in delays.items()]
        return [(name, time.monotonic() - start) async for name in in_order(tasks, grace)]

    return asyncio.run(go())


def test_hosts_known_within_the_grace_come_in_their_order() -> None:
    got = _run({"c": 0.3, "a": 0.0, "b": 0.1}, grace=2.0)
    assert [n for n, _ in got] == ["c", "a", "b"]  # the hosts' order, not the order they answered in
    assert all(at < 0.6 for _, at in got), got  # nobody waited for the grace: the last one in ends it


def test_a_host_still_waiting_after_the_grace_comes_last_and_holds_nobody() -> None:
    got = _run({"mute": 1.5, "live": 0.05, "other": 0.1}, grace=0.3)
    assert [n for n, _ in got] == ["live", "other", "mute"], got
    assert dict(got)["live"] < 0.5 and dict(got)["other"] < 0.5 and dict(got)["mute"] >= 1.5, got
