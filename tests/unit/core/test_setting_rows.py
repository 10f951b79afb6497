"""The table of setting rows (core/setting_rows.py): each row whole, each stored row a typed field of the model
that keeps it, and changes that touch only the rows given (the faces are driven in tests/gui/test_setting_rows.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import assert_never

import pytest
from pydantic import BaseModel
from workroom.core import setting_rows
from workroom.core.app_settings import AppSettings, NoticeSettings
from workroom.core.ceiling import CeilingSettings
from workroom.core.setting_checks import SettingsError, check_setting
from workroom.core.setting_rows import (
    CAPABILITY_MISSING,
    SETTING_ROWS,
    UNIT_SECONDS,
    Capability,
    Kind,
    SettingRow,
    Store,
    row_named,
    rows_in,
)

pytestmark = pytest.mark.unit


def model_of(store: Store) -> type[BaseModel] | None:
    match store:
        case Store.AGENTS:
            return CeilingSettings
        case Store.NOTICES:
            return NoticeSettings
        case Store.THIS_COMPUTER:
            return AppSettings
        case Store.SYSTEM:
            return None
        case _:
            assert_never(store)


def test_names_and_flags_are_each_one_rows() -> None:
    names = [row.name for row in SETTING_ROWS]
    flags = [row.flag for row in SETTING_ROWS]
    assert len(set(names)) == len(names) and len(set(flags)) == len(flags)
    assert not {f"no-{flag}" for flag in flags} & set(flags), "a flag that reads as another's --no- form"
    assert rows_in(*Store) == SETTING_ROWS


@pytest.mark.parametrize("row", SETTING_ROWS, ids=[row.name for row in SETTING_ROWS])
def test_each_row_is_whole(row: SettingRow) -> None:
    assert row.words and row.label and row.flag == row.flag.lower() and " " not in row.flag
    if row.kind is Kind.DURATION:
        assert row.minimum is not None and row.maximum is not None and row.units
        assert 0 < row.minimum <= float(row.default) <= row.maximum
        assert set(row.units) <= set(UNIT_SECONDS)
        assert [UNIT_SECONDS[u] for u in row.units] == sorted((UNIT_SECONDS[u] for u in row.units), reverse=True)
    else:
        assert row.minimum is None and row.maximum is None and not row.units
    assert check_setting(row.name, row.default) == row.default
    if row.under is not None:
        parent = row_named(row.under)
        assert parent is not None and parent.kind is Kind.YES_NO
        assert SETTING_ROWS.index(parent) < SETTING_ROWS.index(row)
    if row.inline:
        assert SETTING_ROWS.index(row) > 0 and SETTING_ROWS[SETTING_ROWS.index(row) - 1].store is row.store
    if row.store is Store.SYSTEM:
        assert row.needs is not None, "a setting the system keeps names what keeps it"
    assert row.optional_for_older_peers is False or row.store is Store.AGENTS


@pytest.mark.parametrize("row", SETTING_ROWS, ids=[row.name for row in SETTING_ROWS])
def test_each_stored_row_is_a_typed_field_of_its_model_with_the_rows_default(row: SettingRow) -> None:
    model = model_of(row.store)
    if model is None:
        return
    assert row.name in model.model_fields, f"{row.name}: no typed attribute on {model.__name__}"
    assert model.model_fields[row.name].default == row.default
    assert AppSettings().value_of(row) == row.default


def test_every_capability_says_why_it_is_missing() -> None:
    assert set(CAPABILITY_MISSING) == set(Capability)
    assert all(words.endswith(".") for words in CAPABILITY_MISSING.values())


def test_a_change_touches_only_the_rows_given_and_keeps_what_a_newer_app_wrote() -> None:
    stored = AppSettings.model_validate({
        "theme": "dark", "hold_idle_sleep": True, "terminal_app": "iTerm",
        "ceiling": {"ceiling_seconds": 90.5, "ask_at_ceiling": True, "quiet_hours": "22-07"},
        "notices": {"lost_work": False, "finished_muted_hosts": ["box1"], "sound": "chime"}})
    changed = stored.with_changes({"prompt_timeout_seconds": 120, "finished": False, "terminal_app": ""})
    before, after = stored.model_dump(), changed.model_dump()
    before["ceiling"]["prompt_timeout_seconds"] = 120.0
    before["notices"]["finished"] = False
    before["terminal_app"] = ""
    assert after == before
    assert changed.with_changes({}) == changed


@pytest.mark.parametrize(("changes", "words"), [
    ({"ceiling_seconds": 10}, "ceiling_seconds must be between 30 and 2592000 seconds"),
    ({"finished_after_seconds": 30}, "finished_after_seconds must be between 60 and 86400 seconds"),
    ({"lost_work": "yes"}, "lost_work must be true or false"),
    ({"terminal_app": "a\x00b"}, "terminal_app must be one line of text"),
    ({"open_at_login": True}, "is not a setting kept in settings.json"),
    ({"colour": "red"}, "is not a setting kept in settings.json"),
])
def test_a_refused_change_names_the_setting_and_changes_nothing(changes: dict[str, object], words: str) -> None:
    with pytest.raises(SettingsError, match=words) as caught:
        AppSettings().with_changes(changes)
    assert caught.value.title and caught.value.hint


def test_a_refusal_names_the_setting_as_the_person_typed_it() -> None:
    with pytest.raises(SettingsError) as caught:
        check_setting("ceiling_seconds", 5.0, called="--ceiling")
    assert caught.value.message.startswith("--ceiling must be between 30 and 2592000 seconds (30 s – 30 d)")
    assert caught.value.field == "ceiling_seconds"


@pytest.mark.parametrize("store", [Store.AGENTS, Store.NOTICES, Store.THIS_COMPUTER])
def test_a_row_added_to_the_table_is_changed_alone_in_any_store(store: Store,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A test-only yes/no row: stored, read back, and left alone by a change of another row."""
    row = SettingRow("test_flag", "A test setting", "test-flag", Kind.YES_NO, False, store, "Test")
    monkeypatch.setattr(setting_rows, "SETTING_ROWS", (*SETTING_ROWS, row))
    settings = AppSettings().with_changes({"test_flag": True})
    assert settings.value_of(row) is True
    other = next(r for r in rows_in(store) if r.name != row.name)
    changed = settings.with_changes({other.name: check_setting(other.name, other.default)})
    assert changed.value_of(row) is True


def test_help_imports_no_rows(tmp_path: Path) -> None:
    """`workroom --help` stays light: the rows are read when `settings set` is parsed or its help printed."""
    code = ("import sys, contextlib, io\nfrom workroom.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: main(sys.argv[1:])\n    except SystemExit: pass\n"
            "print('workroom.core.setting_rows' in sys.modules)")
    for argv, rows in ((["--help"], False), (["settings", "--help"], False), (["settings", "set", "--help"], True)):
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60,
                              env={"WORKROOM_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True)
        assert done.stdout.split()[-1] == str(rows), argv


def test_the_command_lines_docs_name_every_flag() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "cli.md").read_text()
    missing = [row.flag for row in SETTING_ROWS if f"| `--{row.flag}` |" not in docs]
    assert not missing, f"docs/cli.md's settings table lacks {missing}"
