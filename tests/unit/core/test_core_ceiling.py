"""Ceiling settings bounds: the one source of truth for the app's pane and the CLI."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from workroom.core.ceiling import (
    DEFAULT_CEILING_SECONDS,
    DEFAULT_PROMPT_TIMEOUT_SECONDS,
    MAX_DURATION_SECONDS,
    MIN_DURATION_SECONDS,
    CeilingSettings,
    SettingsError,
    check_duration,
    join_hours_minutes,
    split_hours_minutes,
)
from workroom.core.durations import format_duration
from workroom.core.provider_specs import PROVIDER_SPECS
from workroom.core.traits import BOXD_TRAITS, SSH_TRAITS

pytestmark = pytest.mark.unit

FIELDS = ["ceiling_seconds", "prompt_timeout_seconds"]
outside = st.one_of(
    st.floats(max_value=MIN_DURATION_SECONDS, exclude_max=True),
    st.floats(min_value=MAX_DURATION_SECONDS, exclude_min=True),
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.integers(max_value=29),
    st.integers(min_value=2_592_001),
)
inside = st.one_of(
    st.floats(min_value=MIN_DURATION_SECONDS, max_value=MAX_DURATION_SECONDS),
    st.integers(min_value=30, max_value=2_592_000),
)


def test_defaults_match_the_design() -> None:
    settings = CeilingSettings()
    assert settings.ceiling_seconds == DEFAULT_CEILING_SECONDS == 4 * 3600
    assert settings.prompt_timeout_seconds == DEFAULT_PROMPT_TIMEOUT_SECONDS == 600
    assert settings.ask_at_ceiling is False
    assert (MIN_DURATION_SECONDS, MAX_DURATION_SECONDS) == (30, 2_592_000)


@pytest.mark.parametrize("field", FIELDS)
@given(value=outside)
def test_any_value_outside_the_bounds_is_refused(field: str, value: float) -> None:
    with pytest.raises(SettingsError) as caught:
        CeilingSettings.checked(**{field: value})
    assert caught.value.field == field
    assert field in caught.value.message and "30" in caught.value.message and "2592000" in caught.value.message
    with pytest.raises(ValidationError):
        CeilingSettings(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("field", FIELDS)
@given(value=inside)
def test_any_value_inside_the_bounds_is_accepted(field: str, value: float) -> None:
    settings = CeilingSettings.checked(**{field: value})
    assert getattr(settings, field) == float(value)
    assert CeilingSettings(**{field: value}) == settings  # type: ignore[arg-type]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [True, False, "600", None, [600], 10**400])
def test_wrong_types_and_booleans_are_refused(field: str, value: object) -> None:
    with pytest.raises(SettingsError, match=field):
        check_duration(field, value)


def test_ask_mode_must_be_a_boolean() -> None:
    with pytest.raises(SettingsError, match="ask_at_ceiling"):
        CeilingSettings.checked(ask_at_ceiling=1)
    with pytest.raises(ValidationError):
        CeilingSettings(ask_at_ceiling=1)  # type: ignore[arg-type]


def test_ten_seconds_is_refused_with_a_message_naming_field_and_bounds() -> None:
    with pytest.raises(SettingsError) as caught:
        CeilingSettings.checked(ceiling_seconds=10)
    error = caught.value
    assert error.title and error.hint
    assert "ceiling_seconds" in str(error) and "30 s" in str(error) and "30 d" in str(error)


def test_replaced_checks_like_checked() -> None:
    settings = CeilingSettings().replaced(ceiling_seconds=60, ask_at_ceiling=True)
    assert (settings.ceiling_seconds, settings.ask_at_ceiling) == (60, True)
    with pytest.raises(SettingsError):
        settings.replaced(prompt_timeout_seconds=0)
    with pytest.raises(SettingsError, match="Unknown setting"):
        settings.replaced(colour="red")


def test_ask_mode_only_reaches_providers_that_sleep() -> None:
    asking = CeilingSettings(ask_at_ceiling=True)
    assert asking.for_provider(BOXD_TRAITS).ask_at_ceiling is True
    assert asking.for_provider(SSH_TRAITS).ask_at_ceiling is False
    for traits in (spec.traits for spec in PROVIDER_SPECS.values()):
        shaped = asking.for_provider(traits)
        assert shaped.ask_at_ceiling is traits.metering.sleeps
        assert shaped.ceiling_seconds == asking.ceiling_seconds


def test_request_params_are_what_the_protocol_requires() -> None:
    assert CeilingSettings().as_request_params() == {
        "ceiling_seconds": 14400.0,
        "prompt_timeout_seconds": 600.0,
        "ask_at_ceiling": False,
    }


@given(hours=st.integers(0, 720), minutes=st.integers(0, 59))
def test_hours_minutes_round_trip(hours: int, minutes: int) -> None:
    assert split_hours_minutes(join_hours_minutes(hours, minutes)) == (hours, minutes)


def test_split_rounds_to_the_nearest_minute() -> None:
    assert split_hours_minutes(14400) == (4, 0)
    assert split_hours_minutes(30) == (0, 1)
    assert split_hours_minutes(89) == (0, 1)
    assert split_hours_minutes(3599.9) == (1, 0)
    assert split_hours_minutes(CeilingSettings().ceiling_seconds) == (4, 0)
    with pytest.raises(ValueError):
        join_hours_minutes(-1, 0)
    with pytest.raises(ValueError):
        split_hours_minutes(math.nan)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (45, "45 s"), (60, "1 min"), (90, "1 min 30 s"), (100, "1 min 40 s"), (14400, "4 h"),
     (5400, "1 h 30 min"), (86400, "24 h"), (90000, "25 h"), (2 * 86400 + 3 * 3600, "2 d 3 h"),
     (7 * 86400, "7 d"), (2_592_000, "30 d"), (math.nan, "unknown")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_exact_duration_says_what_the_boxes_round() -> None:
    from workroom.core.durations import exact_duration

    assert [exact_duration(s) for s in (30, 90, 90.5, 3630, 5400, 100800, 2592000)] == [
        "30 s", "1 min 30 s", "1 min 30.5 s", "1 h 30 s", "1 h 30 min", "1 d 4 h", "30 d"]


def test_every_setting_decides_whether_the_settings_are_sent_again() -> None:
    """The session re-sends when the agent holds anything else: every row counts (a comparison that left one
    out would never re-send a change to it)."""
    from workroom.core.ceiling import SETTING_FIELDS

    wanted = CeilingSettings()
    assert not wanted.differs_from(wanted.known())
    for field in SETTING_FIELDS:
        other = (not field.default) if isinstance(field.default, bool) else float(field.default) + 60
        assert wanted.differs_from({**wanted.known(), field.name: other}), field.name
        missing = {k: v for k, v in wanted.known().items() if k != field.name}
        assert wanted.differs_from(missing) is not field.optional_for_older_peers, field.name
    assert set(wanted.as_request_params()) == {f.name for f in SETTING_FIELDS}


def test_settings_a_newer_app_wrote_are_kept_not_a_reason_to_refuse() -> None:
    from workroom.core.app_settings import AppSettings

    newer = AppSettings.model_validate({"version": 1, "theme": "dark",
                                        "ceiling": {"ceiling_seconds": 3600, "quiet_hours": "22-07"}})
    assert newer.ceiling.ceiling_seconds == 3600 and newer.ceiling.model_extra == {"quiet_hours": "22-07"}
    changed = newer.ceiling.replaced(prompt_timeout_seconds=120)
    assert changed.model_extra == {"quiet_hours": "22-07"}
    assert "quiet_hours" not in changed.as_request_params()
    assert json.loads(newer.model_dump_json())["theme"] == "dark"

