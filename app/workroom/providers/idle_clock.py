"""One reader for a provider's idle clock, whoever reports it (boxd's CLI, a platform's status page, the
simulator's health page): the same fields, the same rule for "awake", the same bounded HTTP client.

A document is an object with the idle seconds (`idle_seconds`, or `idle_for_s` as the simulator writes it),
optionally the window (`idle_window_seconds` / `idle_window_s`) and a `state`; a state, when given, must be
an awake one, else there is nothing to confirm. Anything else is no reading (None), never an exception.
"""

from __future__ import annotations

import time

from workroom.core.heartbeat_proof import IdleClockReading

IDLE_KEYS = ("idle_seconds", "idle_for_s")
WINDOW_KEYS = ("idle_window_seconds", "idle_window_s")
AWAKE_STATES = ("awake", "running", "started")
ASLEEP_STATES = ("hibernated", "suspended", "stopped", "sleeping", "asleep")
READ_DEADLINE_SECONDS = 5.0


def _first(data: dict[str, object], keys: tuple[str, ...]) -> object:
    for key in keys:
        if key in data:
            return data[key]
    return None


def reading_from(data: object, read_at: float) -> IdleClockReading | None:
    """The idle clock in a parsed document, or None."""
    if not isinstance(data, dict):
        return None
    state = data.get("state")
    if state is not None and str(state).lower() not in AWAKE_STATES:
        return None
    idle = _first(data, IDLE_KEYS)
    window = _first(data, WINDOW_KEYS)
    if isinstance(idle, bool) or not isinstance(idle, int | float):
        return None
    if window is not None and (isinstance(window, bool) or not isinstance(window, int | float)):
        return None
    try:
        return IdleClockReading(idle_seconds=idle, window_seconds=window, read_at=read_at)
    except (ValueError, OverflowError):
        return None


async def read_idle_clock_url(url: str, deadline_seconds: float = READ_DEADLINE_SECONDS) -> IdleClockReading | None:
    """The idle clock a status page reports (through the bounded client), or None when it cannot be read."""
    # Here, not above: an SSH host's connect reads no HTTP (http.client and email stay unloaded: docs/cli.md).
    from workroom.providers.bounded_http import PollFailed, get_json

    try:
        data = await get_json(url, deadline_seconds)
    except PollFailed:
        return None
    return reading_from(data, time.monotonic())
