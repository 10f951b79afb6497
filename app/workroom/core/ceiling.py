"""Awake-ceiling settings and their bounds: the one source of truth for the app and the CLI.

The agent enforces the same bounds (docs/protocol.md); checking here first means a person sees
the mistake where they typed it, with the field and the bounds named.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from workroom.core.durations import format_duration, join_hours_minutes, split_hours_minutes
from workroom.core.errors import ExitCode, UserError
from workroom.core.traits import ProviderTraits

MIN_DURATION_SECONDS = 30.0
"""Shortest ceiling or prompt timeout accepted (same as the agent)."""
MAX_DURATION_SECONDS = 30 * 24 * 3600.0
"""Longest ceiling or prompt timeout accepted: 30 days (same as the agent)."""
DEFAULT_CEILING_SECONDS = 4 * 3600.0
DEFAULT_PROMPT_TIMEOUT_SECONDS = 600.0
DEFAULT_ASK_AT_CEILING = False

DURATION_FIELDS = ("ceiling_seconds", "prompt_timeout_seconds")

__all__ = [
    "DEFAULT_ASK_AT_CEILING",
    "DEFAULT_CEILING_SECONDS",
    "DEFAULT_PROMPT_TIMEOUT_SECONDS",
    "DURATION_FIELDS",
    "MAX_DURATION_SECONDS",
    "MIN_DURATION_SECONDS",
    "CeilingSettings",
    "SettingsError",
    "check_duration",
    "join_hours_minutes",
    "split_hours_minutes",
]


class SettingsError(UserError, ValueError):
    """A setting outside its bounds or of the wrong type. Names the field and the bounds."""

    exit_code = ExitCode.OUT_OF_RANGE

    def __init__(self, field: str, message: str) -> None:
        super().__init__(
            "Setting not accepted",
            message,
            f"Choose a value between {format_duration(MIN_DURATION_SECONDS)} and "
            f"{format_duration(MAX_DURATION_SECONDS)}.",
        )
        self.field = field


def _bounds_text() -> str:
    return (
        f"between {MIN_DURATION_SECONDS:.0f} and {MAX_DURATION_SECONDS:.0f} seconds "
        f"({format_duration(MIN_DURATION_SECONDS)} – {format_duration(MAX_DURATION_SECONDS)})"
    )


def check_duration(field: str, value: object) -> float:
    """Return `value` as seconds if it is a finite number within the bounds, else raise SettingsError.

    Booleans are refused even though Python counts them as numbers: `true` is never a duration.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(
            field,
            f"{field} must be a number of seconds {_bounds_text()}; got {type(value).__name__} {value!r}.",
        )
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise SettingsError(
            field, f"{field} must be a finite number of seconds {_bounds_text()}; got {value!r}."
        )
    if seconds <= 0:
        raise SettingsError(field, f"{field} must be more than zero: {_bounds_text()}; got {value!r}.")
    if not MIN_DURATION_SECONDS <= seconds <= MAX_DURATION_SECONDS:
        raise SettingsError(field, f"{field} must be {_bounds_text()}; got {value!r}.")
    return seconds


class CeilingSettings(BaseModel):
    """Awake ceiling, prompt timeout and ask mode, as this computer hands them to every agent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ceiling_seconds: float = DEFAULT_CEILING_SECONDS
    prompt_timeout_seconds: float = DEFAULT_PROMPT_TIMEOUT_SECONDS
    ask_at_ceiling: bool = Field(default=DEFAULT_ASK_AT_CEILING, strict=True)

    @field_validator("ceiling_seconds", "prompt_timeout_seconds", mode="before")
    @classmethod
    def _check_bounds(cls, value: Any, info: ValidationInfo) -> float:
        return check_duration(str(info.field_name), value)

    @classmethod
    def checked(
        cls,
        *,
        ceiling_seconds: object = DEFAULT_CEILING_SECONDS,
        prompt_timeout_seconds: object = DEFAULT_PROMPT_TIMEOUT_SECONDS,
        ask_at_ceiling: object = DEFAULT_ASK_AT_CEILING,
    ) -> CeilingSettings:
        """Settings from user input; the first bad field raises `SettingsError` (not a pydantic error)."""
        ceiling = check_duration("ceiling_seconds", ceiling_seconds)
        timeout = check_duration("prompt_timeout_seconds", prompt_timeout_seconds)
        if not isinstance(ask_at_ceiling, bool):
            raise SettingsError(
                "ask_at_ceiling", f"ask_at_ceiling must be true or false; got {ask_at_ceiling!r}."
            )
        return cls(ceiling_seconds=ceiling, prompt_timeout_seconds=timeout, ask_at_ceiling=ask_at_ceiling)

    def replaced(self, **changes: object) -> CeilingSettings:
        """A copy with some fields changed, checked like `checked()`."""
        values: dict[str, object] = self.model_dump()
        unknown = set(changes) - set(values)
        if unknown:
            raise SettingsError(sorted(unknown)[0], f"Unknown setting {sorted(unknown)[0]!r}.")
        values.update(changes)
        return CeilingSettings.checked(**values)

    def for_provider(self, traits: ProviderTraits) -> CeilingSettings:
        """The settings one host gets: ask mode only where the provider sleeps when idle.

        On a host that never sleeps, an unanswered prompt would only hide real work, so it gets
        advisory mode (the ceiling is still reported).
        """
        if traits.sleeps_when_idle or not self.ask_at_ceiling:
            return self
        return self.model_copy(update={"ask_at_ceiling": False})

    def as_request_params(self) -> dict[str, float | bool]:
        """The `settings` request's parameters (docs/protocol.md)."""
        return {
            "ceiling_seconds": self.ceiling_seconds,
            "prompt_timeout_seconds": self.prompt_timeout_seconds,
            "ask_at_ceiling": self.ask_at_ceiling,
        }

    @property
    def ceiling_hours_minutes(self) -> tuple[int, int]:
        """The ceiling split for the settings pane's hours and minutes boxes."""
        return split_hours_minutes(self.ceiling_seconds)
