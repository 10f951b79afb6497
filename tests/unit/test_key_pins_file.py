"""providers.platform_key_pins: a platform box's key pin kept in the state folder, shared by every face."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from workroom.providers.platform_key_pins import FILE_NAME, PlatformKeyPins

pytestmark = pytest.mark.unit

A = "SHA256:" + "A" * 43
B = "SHA256:" + "B" * 43


def test_a_pin_is_kept_for_its_run_and_seen_by_another_process(tmp_path: Path) -> None:
    app, command = PlatformKeyPins(tmp_path), PlatformKeyPins(tmp_path)  # two faces, one state folder
    assert app.pin("coder.ws1", "7", A) == A
    assert command.pin("coder.ws1", "7", B) == A  # the same run: the key pinned first
    assert command.pin("coder.ws1", "8", B) == B  # a new run: its key taken, the old run's pin gone
    assert app.pin("coder.ws1", "7", A) == A  # back to run 7 is a new pin (only the latest run is kept)
    assert app.pin("codespaces.x", "", B) == B
    path = tmp_path / FILE_NAME
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["pins"] == {"coder.ws1": {"run": "7", "key": A},
                                                      "codespaces.x": {"run": "", "key": B}}
    assert command.forget("coder.ws1") == 1 and command.forget("coder.ws1") == 0
    assert app.pin("coder.ws1", "7", B) == B  # forgotten: pinned anew


@pytest.mark.parametrize("text", ["{", "[]", '{"pins": []}', '{"pins": {"coder.ws1": {"run": 7, "key": "x"}}}',
                                  '{"pins": {"coder.ws1": {"run": "7", "key": "SHA256:short"}}}'])
def test_a_damaged_file_or_entry_holds_no_pin(tmp_path: Path, text: str) -> None:
    (tmp_path / FILE_NAME).write_text(text)
    assert PlatformKeyPins(tmp_path).pin("coder.ws1", "7", B) == B
    assert json.loads((tmp_path / FILE_NAME).read_text())["pins"] == {"coder.ws1": {"run": "7", "key": B}}


def test_a_folder_that_cannot_be_written_keeps_the_pin_for_this_run(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    state = tmp_path / "state"
    state.write_text("a file where the folder should be")  # no folder can be made there, even by root
    pins = PlatformKeyPins(state)
    with caplog.at_level(logging.WARNING):
        assert pins.pin("coder.ws1", "7", A) == A
        assert pins.pin("coder.ws1", "7", B) == A
    assert "for this run only" in caplog.text


def test_a_fifo_in_its_place_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / FILE_NAME)
    pins = PlatformKeyPins(tmp_path)
    assert pins.pin("coder.ws1", "7", A) == A  # read as nothing kept (never blocks), the pin made
