"""Durations in words and in hours + minutes, for badges, tooltips and the settings pane."""

from __future__ import annotations

import math


def format_duration(seconds: float) -> str:
    """A duration in words, the one style of every face: "45 s", "1 min 30 s", "4 h 30 min", "24 h", "7 d".

    The two largest units that matter, so a tooltip or a countdown stays readable and exact enough to tick:
    seconds under a minute, minutes and seconds under an hour, hours and minutes under two days (a day-long
    window reads "24 h", as the why-awake strip's "last 24 h" does), then days and hours.
    """
    if not math.isfinite(seconds):
        return "unknown"
    total = max(0, round(seconds))
    if total < 60:
        return f"{total} s"
    if total < 3600:
        minutes, secs = divmod(total, 60)
        return f"{minutes} min" if secs == 0 else f"{minutes} min {secs} s"
    if total < 2 * 86400:
        minutes = round(total / 60)
        hours, mins = divmod(minutes, 60)
        return f"{hours} h" if mins == 0 else f"{hours} h {mins} min"
    hours_total = round(total / 3600)
    days, hours = divmod(hours_total, 24)
    return f"{days} d" if hours == 0 else f"{days} d {hours} h"


def exact_duration(seconds: float) -> str:
    """A duration in words to the second, unrounded: "1 min 30 s", "1 h 30 s", "2 d 4 h", "90.5 s" -> "1 min 30.5 s".

    For a value the settings pane's boxes cannot show whole (they count minutes, or whole seconds).
    """
    if not math.isfinite(seconds) or seconds < 0:
        return "unknown"
    whole = math.floor(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    fraction = seconds - whole
    parts = [f"{value} {unit}" for value, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if value]
    if secs or fraction or not parts:
        parts.append(f"{secs + fraction:.10g} s" if fraction else f"{secs} s")
    return " ".join(parts)


def split_hours_minutes(seconds: float) -> tuple[int, int]:
    """Seconds as (hours, minutes) rounded to the nearest minute, for two spin boxes."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"cannot split {seconds!r} into hours and minutes")
    minutes = math.floor(seconds / 60 + 0.5)
    return divmod(minutes, 60)


def join_hours_minutes(hours: int, minutes: int) -> float:
    """(hours, minutes) back to seconds. Minutes may exceed 59; negatives are refused."""
    if isinstance(hours, bool) or isinstance(minutes, bool):
        raise ValueError("hours and minutes must be whole numbers, not booleans")
    if hours < 0 or minutes < 0:
        raise ValueError(f"hours and minutes cannot be negative (got {hours} h {minutes} min)")
    return float(hours * 3600 + minutes * 60)
