"""Awake-ceiling settings: the rows of core.setting_rows kept in `Store.AGENTS`, as this computer hands them
to every agent.

The model's defaults, `replaced`, `as_request_params`, the session's "does the agent hold what we want?"
comparison and every face read the rows; the agent keeps its own table (wr_agent.settings.FIELDS) and
tests/integration/test_protocol_contract.py probes its bounds with these. Checking here first means a person
sees the mistake where they typed it, with the field and the bounds named (core.setting_checks).

A settings file written by a newer app may hold fields this one does not know: they are kept (and saved
again), never a reason to set the file aside.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from workroom.core.durations import join_hours_minutes, split_hours_minutes
from workroom.core.setting_checks import SettingsError, check_duration, check_setting
from workroom.core.setting_rows import (
    DEFAULT_ASK_AT_CEILING,
    DEFAULT_CEILING_SECONDS,
    DEFAULT_PROMPT_TIMEOUT_SECONDS,
    MAX_DURATION_SECONDS,
    MIN_DURATION_SECONDS,
    SettingRow,
    Store,
    row_named,
    rows_in,
)
from workroom.core.traits import ProviderTraits

SETTING_FIELDS: tuple[SettingRow, ...] = rows_in(Store.AGENTS)
"""The settings every agent holds (the agent's `settings.FIELDS` has the same names, in this order)."""
SETTINGS_BY_NAME: Mapping[str, SettingRow] = {row.name: row for row in SETTING_FIELDS}

__all__ = [
    "DEFAULT_ASK_AT_CEILING",
    "DEFAULT_CEILING_SECONDS",
    "DEFAULT_PROMPT_TIMEOUT_SECONDS",
    "MAX_DURATION_SECONDS",
    "MIN_DURATION_SECONDS",
    "SETTINGS_BY_NAME",
    "SETTING_FIELDS",
    "CeilingSettings",
    "SettingsError",
    "check_duration",
    "check_setting",
    "join_hours_minutes",
    "split_hours_minutes",
]


def _default(name: str) -> Any:
    row = row_named(name)
    assert row is not None, name
    return row.default


class CeilingSettings(BaseModel):
    """Awake ceiling, prompt timeout and ask mode, as this computer hands them to every agent.

    Fields a newer app wrote (not among the rows) are kept as they were (`model_extra`), saved again, and
    never sent to an agent."""

    model_config = ConfigDict(frozen=True, extra="allow")

    ceiling_seconds: float = _default("ceiling_seconds")
    prompt_timeout_seconds: float = _default("prompt_timeout_seconds")
    ask_at_ceiling: bool = _default("ask_at_ceiling")

    @field_validator(*(row.name for row in SETTING_FIELDS), mode="before")
    @classmethod
    def _check_row(cls, value: Any, info: ValidationInfo) -> Any:
        return check_setting(str(info.field_name), value)

    @classmethod
    def checked(cls, **values: object) -> CeilingSettings:
        """New settings (every field not given takes its default: for a first file or a test, never to apply
        what a person changed, which is `replaced`); the first bad or unknown field raises `SettingsError`."""
        for name in values:
            if name not in {row.name for row in rows_in(Store.AGENTS)}:
                raise SettingsError(name, f"Unknown setting {name!r}.")
        return cls.model_validate({row.name: check_setting(row.name, values.get(row.name, row.default))
                                   for row in rows_in(Store.AGENTS)})

    def known(self) -> dict[str, Any]:
        """The rows' fields, by name (without what a newer app wrote)."""
        return {row.name: self._value(row) for row in rows_in(Store.AGENTS)}

    def _value(self, row: SettingRow) -> Any:
        return getattr(self, row.name, row.default)

    def replaced(self, **changes: object) -> CeilingSettings:
        """A copy with only `changes` changed (each checked by its row: `SettingsError`); every other field, and
        every field a newer app wrote, as it was."""
        for name, value in changes.items():
            row = row_named(name)
            if row is None or row.store is not Store.AGENTS:
                raise SettingsError(name, f"Unknown setting {name!r}.")
            check_setting(name, value)
        return CeilingSettings.model_validate({**self.model_dump(), **changes})

    def for_provider(self, traits: ProviderTraits) -> CeilingSettings:
        """The settings one host gets: ask mode only where the provider sleeps when idle.

        On a host that never sleeps, an unanswered prompt would only hide real work, so it gets
        advisory mode (the ceiling is still reported).
        """
        if traits.metering.sleeps or not self.ask_at_ceiling:
            return self
        return self.model_copy(update={"ask_at_ceiling": False})

    def as_request_params(self, reported: Mapping[str, object] | None = None) -> dict[str, Any]:
        """The `settings` request's parameters (docs/protocol.md). `reported`: what the agent's status holds
        (`Status.settings_values`); a field optional for older peers that it does not report is left out."""
        return {f.name: self._value(f) for f in rows_in(Store.AGENTS)
                if not (f.optional_for_older_peers and reported is not None and f.name not in reported)}

    def differs_from(self, reported: Mapping[str, object]) -> bool:
        """Whether an agent reporting `reported` holds other settings than these (so they must be sent). Every
        row is compared; a field optional for older peers that the agent does not report is not."""
        return self.as_request_params(reported) != {k: reported.get(k) for k in self.as_request_params(reported)}
