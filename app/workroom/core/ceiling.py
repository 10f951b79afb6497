"""Awake-ceiling settings: one row per field (`SETTING_FIELDS`), the one source of truth for the app and the CLI.

Each row names the field, its words, its default, its bounds (durations) and whether an older agent may
lack it. The model's defaults, `checked`, `as_request_params`, the session's "does the agent hold what we
want?" comparison, the settings pane's error text and the CLI's summary all read the rows; the agent keeps
its own table (wr_agent.settings.FIELDS) and tests/integration/test_protocol_contract.py probes its bounds
with these. Checking here first means a person sees the mistake where they typed it, with the field and the
bounds named.

A settings file written by a newer app may hold fields this one does not know: they are kept (and saved
again), never a reason to set the file aside.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

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


@dataclass(frozen=True)
class SettingField:
    """One ceiling setting, as both the app and the agent know it."""

    name: str
    """Its key in settings.json, the `settings` request and the status object."""
    words: str
    """What it is, for a sentence ("The awake ceiling")."""
    short: str
    """Its name in the CLI's one-line summary ("ceiling")."""
    default: float | bool
    minimum: float | None = None
    """Bounds of a duration (seconds, inclusive); None for a yes/no setting."""
    maximum: float | None = None
    optional_for_older_peers: bool = False
    """An agent that predates it does not report it: such an agent is not sent it, and is not re-sent the
    settings for it (a field added later is optional; the first three are not)."""

    @property
    def is_duration(self) -> bool:
        return self.minimum is not None

    def bounds_text(self) -> str:
        assert self.minimum is not None and self.maximum is not None
        return (f"between {self.minimum:.0f} and {self.maximum:.0f} seconds "
                f"({format_duration(self.minimum)} – {format_duration(self.maximum)})")

    def summary(self, value: float | bool) -> str:
        """`short` and the value, for the CLI ("ceiling 14400 s", "ask mode on")."""
        if isinstance(value, bool):
            return f"{self.short} {'on' if value else 'off'}"
        return f"{self.short} {value:g} s"


SETTING_FIELDS: tuple[SettingField, ...] = (
    SettingField("ceiling_seconds", "The awake ceiling", "ceiling", DEFAULT_CEILING_SECONDS,
                 MIN_DURATION_SECONDS, MAX_DURATION_SECONDS),
    SettingField("prompt_timeout_seconds", "The prompt timeout", "prompt timeout", DEFAULT_PROMPT_TIMEOUT_SECONDS,
                 MIN_DURATION_SECONDS, MAX_DURATION_SECONDS),
    SettingField("ask_at_ceiling", "Ask mode", "ask mode", DEFAULT_ASK_AT_CEILING),
)
"""Every ceiling setting. Adding one: a row here, the attribute on CeilingSettings, and the agent's row."""
SETTINGS_BY_NAME: Mapping[str, SettingField] = {f.name: f for f in SETTING_FIELDS}
DURATION_FIELDS = tuple(f.name for f in SETTING_FIELDS if f.is_duration)

__all__ = [
    "DEFAULT_ASK_AT_CEILING",
    "DEFAULT_CEILING_SECONDS",
    "DEFAULT_PROMPT_TIMEOUT_SECONDS",
    "DURATION_FIELDS",
    "MAX_DURATION_SECONDS",
    "MIN_DURATION_SECONDS",
    "SETTINGS_BY_NAME",
    "SETTING_FIELDS",
    "CeilingSettings",
    "SettingField",
    "SettingsError",
    "check_duration",
    "check_setting",
    "join_hours_minutes",
    "split_hours_minutes",
]


class SettingsError(UserError, ValueError):
    """A setting outside its bounds or of the wrong type. Names the field and the bounds."""

    exit_code = ExitCode.OUT_OF_RANGE

    def __init__(self, field: str, message: str) -> None:
        row = SETTINGS_BY_NAME.get(field)
        if row is not None and row.minimum is not None and row.maximum is not None:
            hint = f"Choose a value between {format_duration(row.minimum)} and {format_duration(row.maximum)}."
        elif row is not None:
            hint = "Choose true or false."
        else:
            hint = f"The settings are: {', '.join(SETTINGS_BY_NAME)}."
        super().__init__("Setting not accepted", message, hint)
        self.field = field


def check_setting(field: str, value: object) -> float | bool:
    """`value` if the setting called `field` can hold it (its row's type and bounds), else SettingsError."""
    row = SETTINGS_BY_NAME.get(field)
    if row is None:
        raise SettingsError(field, f"Unknown setting {field!r}.")
    if row.is_duration:
        return check_duration(field, value)
    if not isinstance(value, bool):
        raise SettingsError(field, f"{field} must be true or false; got {value!r}.")
    return value


def check_duration(field: str, value: object) -> float:
    """Return `value` as seconds if it is a finite number within the field's bounds, else raise SettingsError.

    Booleans are refused even though Python counts them as numbers: `true` is never a duration.
    """
    row = SETTINGS_BY_NAME.get(field)
    low = row.minimum if row is not None and row.minimum is not None else MIN_DURATION_SECONDS
    high = row.maximum if row is not None and row.maximum is not None else MAX_DURATION_SECONDS
    bounds = (row if row is not None and row.is_duration else SETTING_FIELDS[0]).bounds_text()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(
            field,
            f"{field} must be a number of seconds {bounds}; got {type(value).__name__} {value!r}.",
        )
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise SettingsError(
            field, f"{field} must be a finite number of seconds {bounds}; got {value!r}."
        )
    if seconds <= 0:
        raise SettingsError(field, f"{field} must be more than zero: {bounds}; got {value!r}.")
    if not low <= seconds <= high:
        raise SettingsError(field, f"{field} must be {bounds}; got {value!r}.")
    return seconds


def _default(name: str) -> Any:
    return SETTINGS_BY_NAME[name].default


class CeilingSettings(BaseModel):
    """Awake ceiling, prompt timeout and ask mode, as this computer hands them to every agent.

    Fields a newer app wrote (not in SETTING_FIELDS) are kept as they were (`model_extra`), saved again, and
    never sent to an agent."""

    model_config = ConfigDict(frozen=True, extra="allow")

    ceiling_seconds: float = _default("ceiling_seconds")
    prompt_timeout_seconds: float = _default("prompt_timeout_seconds")
    ask_at_ceiling: bool = _default("ask_at_ceiling")

    @field_validator(*SETTINGS_BY_NAME, mode="before")
    @classmethod
    def _check_row(cls, value: Any, info: ValidationInfo) -> float | bool:
        return check_setting(str(info.field_name), value)

    @classmethod
    def checked(cls, **values: object) -> CeilingSettings:
        """Settings from user input (every field not given takes its default); the first bad or unknown
        field raises `SettingsError` (not a pydantic error)."""
        for name in values:
            if name not in SETTINGS_BY_NAME:
                raise SettingsError(name, f"Unknown setting {name!r}.")
        checked = {f.name: check_setting(f.name, values.get(f.name, f.default)) for f in SETTING_FIELDS}
        return cls.model_validate(checked)

    def known(self) -> dict[str, float | bool]:
        """The fields of SETTING_FIELDS, by name (without what a newer app wrote)."""
        return {f.name: getattr(self, f.name) for f in SETTING_FIELDS}

    def replaced(self, **changes: object) -> CeilingSettings:
        """A copy with some fields changed, checked like `checked()`; fields a newer app wrote are kept."""
        return CeilingSettings.checked(**{**self.known(), **changes}).keeping_unknown(self)

    def keeping_unknown(self, before: CeilingSettings) -> CeilingSettings:
        """These settings, with the fields a newer app wrote into `before` carried over (so saving them loses
        nothing a newer version keeps)."""
        extra = before.model_extra or {}
        return self if not extra else CeilingSettings.model_validate({**extra, **self.known()})

    def for_provider(self, traits: ProviderTraits) -> CeilingSettings:
        """The settings one host gets: ask mode only where the provider sleeps when idle.

        On a host that never sleeps, an unanswered prompt would only hide real work, so it gets
        advisory mode (the ceiling is still reported).
        """
        if traits.sleeps_when_idle or not self.ask_at_ceiling:
            return self
        return self.model_copy(update={"ask_at_ceiling": False})

    def as_request_params(self, reported: Mapping[str, object] | None = None) -> dict[str, float | bool]:
        """The `settings` request's parameters (docs/protocol.md). `reported`: what the agent's status holds
        (`Status.settings_values`); a field optional for older peers that it does not report is left out."""
        return {f.name: getattr(self, f.name) for f in SETTING_FIELDS
                if not (f.optional_for_older_peers and reported is not None and f.name not in reported)}

    def differs_from(self, reported: Mapping[str, object]) -> bool:
        """Whether an agent reporting `reported` holds other settings than these (so they must be sent). Every
        row is compared; a field optional for older peers that the agent does not report is not."""
        return self.as_request_params(reported) != {k: reported.get(k) for k in self.as_request_params(reported)}

    def summary(self) -> str:
        """One line for the CLI: "ceiling 14400 s, prompt timeout 600 s, ask mode off"."""
        return ", ".join(f.summary(getattr(self, f.name)) for f in SETTING_FIELDS)

    @property
    def ceiling_hours_minutes(self) -> tuple[int, int]:
        """The ceiling split for the settings pane's hours and minutes boxes."""
        return split_hours_minutes(self.ceiling_seconds)
