"""Settings bounds, the atomic 0600 file, and corrupt-file handling."""

import json
import math
import os
import stat

import pytest
from wr_agent import settings as sm

pytestmark = pytest.mark.unit

GOOD = {"ceiling_seconds": 3600, "prompt_timeout_seconds": 600, "ask_at_ceiling": True}


def test_valid_settings():
    s = sm.validate(GOOD)
    assert s.to_dict() == {"ceiling_seconds": 3600.0, "prompt_timeout_seconds": 600.0, "ask_at_ceiling": True}


@pytest.mark.parametrize("value", [0, -1, 29.9, 2592000.5, math.nan, math.inf, -math.inf, 1e300])
def test_out_of_range_names_field_and_bounds(value):
    with pytest.raises(sm.SettingsError) as e:
        sm.validate(dict(GOOD, ceiling_seconds=value))
    assert e.value.code == "out_of_range"
    assert "ceiling_seconds" in e.value.message and "30" in e.value.message and "2592000" in e.value.message


@pytest.mark.parametrize("value", [True, "60", None, [60]])
def test_wrong_type_is_invalid(value):
    with pytest.raises(sm.SettingsError) as e:
        sm.validate(dict(GOOD, prompt_timeout_seconds=value))
    assert e.value.code == "invalid"


def test_bounds_inclusive_and_every_required_field_required_in_a_request():
    sm.validate(dict(GOOD, ceiling_seconds=30, prompt_timeout_seconds=2592000))
    for field in (f.name for f in sm.FIELDS if f.required):
        bad = dict(GOOD)
        del bad[field]
        with pytest.raises(sm.SettingsError) as e:
            sm.validate(bad)
        assert e.value.code == "invalid" and field in e.value.message
    with pytest.raises(sm.SettingsError):
        sm.validate(dict(GOOD, ask_at_ceiling=1))


def test_test_min_duration_lowers_the_bound():
    assert sm.validate(dict(GOOD, ceiling_seconds=2), min_duration=1).ceiling_seconds == 2


def test_save_is_0600_and_loads_back(tmp_path):
    path = str(tmp_path / "a.sock.settings")
    sm.save(path, sm.validate(GOOD))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sm.load(path) == (sm.validate(GOOD), None)
    assert os.listdir(str(tmp_path)) == ["a.sock.settings"]  # no temp file left


BAD_FILES = [b"{not json", b"\xff\xfe", b"[]", json.dumps(dict(GOOD, ceiling_seconds=1)).encode()]


@pytest.mark.parametrize("content", BAD_FILES)
def test_corrupt_file_is_explained_not_used(tmp_path, content):
    path = tmp_path / "s"
    path.write_bytes(content)
    settings, error = sm.load(str(path))
    assert settings is None and str(path) in error
    assert path.read_bytes() == content


def test_missing_file_is_no_error(tmp_path):
    assert sm.load(str(tmp_path / "none")) == (None, None)


@pytest.mark.parametrize("value", [10**400, -(10**400), 10**309])
def test_integers_too_large_for_a_float_are_out_of_range_not_a_crash(value):
    with pytest.raises(sm.SettingsError) as e:
        sm.validate(dict(GOOD, prompt_timeout_seconds=value))
    assert e.value.code == "out_of_range" and "prompt_timeout_seconds" in e.value.message
    assert len(e.value.message) < 200  # the number is not echoed digit by digit


def test_a_file_with_a_huge_integer_is_explained_not_fatal(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{"ceiling_seconds": 1%s, "prompt_timeout_seconds": 600, "ask_at_ceiling": false}' % ("0" * 400))
    settings, error = sm.load(str(p))
    assert settings is None and "ceiling_seconds" in error and "must be between" in error


def test_a_file_an_older_agent_wrote_loads_with_defaults_for_what_it_lacks(tmp_path):
    """A field added to FIELDS must not make the agent refuse the file every earlier version wrote."""
    path = tmp_path / "s"
    path.write_text(json.dumps({"ceiling_seconds": 3600}))
    settings, error = sm.load(str(path))
    assert error is None
    assert settings.to_dict() == {"ceiling_seconds": 3600.0, "prompt_timeout_seconds": sm.DEFAULT_PROMPT_TIMEOUT,
                                  "ask_at_ceiling": False}


def test_fields_a_newer_agent_wrote_are_kept_when_the_file_is_saved_again(tmp_path):
    path = str(tmp_path / "s")
    with open(path, "w") as f:
        json.dump(dict(GOOD, quiet_hours="22-07"), f)
    settings, error = sm.load(path)
    assert error is None and settings.extra == {"quiet_hours": "22-07"}
    changed = sm.validate(dict(GOOD, ceiling_seconds=7200))
    changed.extra = settings.extra
    sm.save(path, changed)
    with open(path) as f:
        assert json.load(f) == dict(GOOD, ceiling_seconds=7200.0, prompt_timeout_seconds=600.0, quiet_hours="22-07")
