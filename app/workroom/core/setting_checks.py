"""Whether a setting can hold a value: its row's kind and bounds (core.setting_rows), checked the same way for
the pane, the CLI, settings.json's models and the agent's bounds (tests/integration/test_protocol_contract.py).

A refusal is a `SettingsError` naming the setting as the person typed it (`called`: the CLI's `--ceiling`; by
default the row's name) and its bounds, never a pydantic message.
"""

from __future__ import annotations

import math
from typing import assert_never

from workroom.core.durations import format_duration
from workroom.core.errors import ExitCode, UserError
from workroom.core.setting_rows import (
    MAX_DURATION_SECONDS,
    MIN_DURATION_SECONDS,
    Kind,
    SettingRow,
    bounds_text,
    row_named,
)

MAX_TEXT_CHARS = 1000


class SettingsError(UserError, ValueError):
    """A setting outside its bounds or of the wrong type. Names the field and the bounds."""

    exit_code = ExitCode.OUT_OF_RANGE

    def __init__(self, field: str, message: str) -> None:
        row = row_named(field)
        if row is not None and row.minimum is not None and row.maximum is not None:
            hint = f"Choose a value between {format_duration(row.minimum)} and {format_duration(row.maximum)}."
        elif row is not None and row.kind is Kind.YES_NO:
            hint = "Choose true or false (on or off)."
        elif row is not None:
            hint = f"Choose one line of text, at most {MAX_TEXT_CHARS} characters."
        else:
            hint = "`workroom settings get` lists the settings."
        super().__init__("Setting not accepted", message, hint)
        self.field = field


class SettingUnavailable(UserError):
    """A setting this computer cannot change (it lacks what the setting needs): says why."""

    exit_code = ExitCode.ERROR


def check_setting(field: str, value: object, called: str | None = None) -> float | bool | str:
    """`value` if the setting called `field` can hold it (its row's kind and bounds), else SettingsError naming
    it as `called` (default: `field`)."""
    row = row_named(field)
    if row is None:
        raise SettingsError(field, f"Unknown setting {called or field!r}.")
    who = called or field
    match row.kind:
        case Kind.DURATION:
            return check_duration(field, value, called)
        case Kind.YES_NO:
            if not isinstance(value, bool):
                raise SettingsError(field, f"{who} must be true or false; got {value!r}.")
            return value
        case Kind.TEXT:
            if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS or any(ord(c) < 32 for c in value):
                raise SettingsError(field, f"{who} must be one line of text; got {value!r:.80}.")
            return value
        case _:
            assert_never(row.kind)


def _duration_row(field: str) -> SettingRow | None:
    row = row_named(field)
    return row if row is not None and row.is_duration else None


def check_duration(field: str, value: object, called: str | None = None) -> float:
    """Return `value` as seconds if it is a finite number within the field's bounds, else raise SettingsError.

    Booleans are refused even though Python counts them as numbers: `true` is never a duration.
    """
    row = _duration_row(field)
    low = row.minimum if row is not None and row.minimum is not None else MIN_DURATION_SECONDS
    high = row.maximum if row is not None and row.maximum is not None else MAX_DURATION_SECONDS
    bounds = bounds_text(low, high)
    who = called or field
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(
            field, f"{who} must be a number of seconds {bounds}; got {type(value).__name__} {value!r}.")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise SettingsError(field, f"{who} must be a finite number of seconds {bounds}; got {value!r}.")
    if seconds <= 0:
        raise SettingsError(field, f"{who} must be more than zero: {bounds}; got {_as_typed(value)}.")
    if not low <= seconds <= high:
        raise SettingsError(field, f"{who} must be {bounds}; got {_as_typed(value)}.")
    return seconds


def _as_typed(value: int | float) -> str:
    """A number as a person typed it: `--ceiling 10` reads back "10", not "10.0"."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)
