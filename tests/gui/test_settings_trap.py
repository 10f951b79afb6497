"""The bool-reset trap: Apply to all hosts used to fill every setting the pane did not send with its default, so
a yes/no setting the person did not touch was reset by every Apply (here a test-only fourth every-host row)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gui_helpers import wait_for
from workroom.core import setting_rows
from workroom.core.ceiling import CeilingSettings
from workroom.core.setting_rows import Kind, SettingRow, Store
from workroom.storage import save_settings

pytestmark = pytest.mark.gui

TEST_ROW = SettingRow("test_hold", "A test setting", "test-hold", Kind.YES_NO, False, Store.AGENTS,
                      "A test-only yes/no setting", optional_for_older_peers=True)


def test_apply_keeps_a_yes_no_setting_the_person_did_not_change(monkeypatch: pytest.MonkeyPatch, engine: Any,
                                                                qtbot: Any, run: Any) -> None:
    """Fails on the code before the pane sent only what changed: the stored `true` came back `false`."""
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    monkeypatch.setattr(setting_rows, "SETTING_ROWS", (*setting_rows.SETTING_ROWS, TEST_ROW))
    stored = CeilingSettings.model_validate({**CeilingSettings().model_dump(), "test_hold": True})
    engine.settings = engine.settings.model_copy(update={"ceiling": stored})
    save_settings(engine.paths, engine.settings)
    window = MainWindow(AppController(engine))
    qtbot.addWidget(window)
    pane = window.settings
    assert pane.editors["test_hold"].value() is True  # the row has its face: it shows what is stored

    async def apply() -> None:
        pane.editors["ceiling_seconds"].boxes["h"].setValue(1)
        pane.editors["ceiling_seconds"].boxes["min"].setValue(0)
        pane.apply_button.click()
        await wait_for(lambda: pane.result.text().startswith("Saved"), 10, "the settings to be applied")

    run(apply())
    window.cards.timer.stop()
    saved = json.loads(engine.paths.settings_file.read_text())["ceiling"]
    assert saved["ceiling_seconds"] == 3600
    assert saved["test_hold"] is True, saved
