"""Settings pane bounds, the add-host dialog's field checks, and the host-key dialog."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gui_helpers import wait_for
from PySide6.QtWidgets import QApplication, QLabel
from workroom.core.ceiling import CeilingSettings
from workroom.core.hosts import Host
from workroom.core.questions import HostKeyQuestion
from workroom.ui.host_dialog import AddHostDialog
from workroom.ui.host_key_dialog import HostKeyDialog, ask_host_key
from workroom.ui.plain_widgets import code_text

pytestmark = pytest.mark.gui


def box(pane: Any, name: str, unit: str) -> Any:
    """The spin box of one unit of a duration row's editor."""
    return pane.editors[name].boxes[unit]


def test_settings_pane_refuses_ten_seconds_visibly(window: Any, engine: Any, run: Any) -> None:
    pane = window.settings
    window.show_settings()
    before = engine.settings.ceiling
    box(pane, "prompt_timeout_seconds", "min").setValue(0)
    box(pane, "prompt_timeout_seconds", "s").setValue(10)
    assert pane.error.isVisible()
    assert pane.error.text() == "The prompt timeout must be between 30 s and 30 d; 10 s is not. Not applied."
    assert not pane.apply_button.isEnabled()
    pane.request_apply()  # even if asked directly, nothing goes out
    assert engine.settings.ceiling == before
    assert not engine.paths.settings_file.exists()
    for unit in ("h", "min", "s"):
        box(pane, "ceiling_seconds", unit).setValue(0)
    assert "The awake ceiling must be between 30 s and 30 d; 0 s is not" in pane.error.text()
    assert pane.bounds.text() == "Each between 30 s and 30 d."


def test_settings_pane_applies_and_persists(window: Any, engine: Any, run: Any) -> None:
    pane = window.settings

    async def apply() -> None:
        box(pane, "ceiling_seconds", "h").setValue(1)
        box(pane, "ceiling_seconds", "min").setValue(30)
        box(pane, "prompt_timeout_seconds", "min").setValue(2)
        box(pane, "prompt_timeout_seconds", "s").setValue(0)
        pane.editors["ask_at_ceiling"].check.setChecked(True)
        assert not pane.error.isVisible()
        pane.apply_button.click()
        await wait_for(lambda: pane.result.text().startswith("Saved"), 10, "the settings to be applied")

    run(apply())
    assert engine.settings.ceiling == CeilingSettings(ceiling_seconds=5400, prompt_timeout_seconds=120,
                                                      ask_at_ceiling=True)
    saved = json.loads(engine.paths.settings_file.read_text())
    assert saved["ceiling"]["ceiling_seconds"] == 5400


def test_a_value_in_fractions_survives_applying_another_change_and_an_edit_applies(qtbot: Any) -> None:
    from workroom.ui.settings_view import SettingsView

    view = SettingsView()
    qtbot.addWidget(view)
    view.show()
    applied: list[dict[str, Any]] = []
    view.apply_requested.connect(applied.append)
    timeout = view.editors["prompt_timeout_seconds"]
    for seconds in (90, 30):
        view.load(CeilingSettings.checked(ceiling_seconds=seconds, prompt_timeout_seconds=90.5).known())
        shown = tuple(box(view, "ceiling_seconds", unit).value() for unit in ("h", "min", "s"))
        assert shown == (0, seconds // 60, seconds % 60)  # whole seconds show exactly
        ask = view.editors["ask_at_ceiling"].check
        ask.setChecked(not ask.isChecked())
        view.apply_button.click()
        assert applied[-1] == {"ask_at_ceiling": ask.isChecked()}  # only what changed: the rest keep theirs
        view.show_outcome({})
        # The boxes show whole seconds; a fraction is kept exactly and said under them.
        assert timeout.note.isVisible() and "The prompt timeout is 1 min 30.5 s" in timeout.note.text()
        assert not view.editors["ceiling_seconds"].note.isVisible()
    view.load({"ask_at_ceiling": ask.isChecked()})  # what the window does once applied
    box(view, "ceiling_seconds", "min").setValue(3)  # an edit is what the boxes say
    box(view, "ceiling_seconds", "s").setValue(0)
    view.apply_button.click()
    assert applied[-1] == {"ceiling_seconds": 180}
    view.show_outcome({})
    box(view, "prompt_timeout_seconds", "s").setValue(31)
    assert not timeout.note.isVisible()
    view.apply_button.click()
    assert applied[-1] == {"ceiling_seconds": 180, "prompt_timeout_seconds": 91}


@pytest.mark.parametrize(("name", "unit", "typed", "words"), [
    ("prompt_timeout_seconds", "min", "99999", "99999 min (69 d 11 h) is not"),
    ("ceiling_seconds", "h", "999", "999 h (41 d 15 h) is not"),
])
def test_settings_boxes_keep_what_was_typed_and_refuse_it_in_words(qtbot: Any, name: str, unit: str, typed: str,
                                                                    words: str) -> None:
    """A number past the bounds stays in its box as typed (it used to lose digits: 99999 min became 9 min), and
    the pane says why it is refused; the lowest ceiling it says it takes, 30 s, can be set."""
    from PySide6.QtCore import Qt
    from workroom.ui.settings_view import SettingsView

    view = SettingsView()
    qtbot.addWidget(view)
    view.show()
    view.load(CeilingSettings().known())
    spin = box(view, name, unit)
    spin.selectAll()
    spin.setFocus()
    qtbot.keyClicks(spin.lineEdit(), typed)
    assert spin.value() == int(typed) and spin.lineEdit().text().startswith(typed)
    assert view.error.isVisible() and words in view.error.text(), view.error.text()
    assert not view.apply_button.isEnabled()
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Tab)  # leaving the box does not change it either
    assert spin.value() == int(typed)
    view.load(CeilingSettings().known())
    applied: list[dict[str, Any]] = []
    view.apply_requested.connect(applied.append)
    box(view, "ceiling_seconds", "h").setValue(0)
    box(view, "ceiling_seconds", "min").setValue(0)
    box(view, "ceiling_seconds", "s").setValue(30)
    assert "30 s" in view.bounds.text() and not view.error.isVisible()
    view.apply_button.click()
    assert applied[-1]["ceiling_seconds"] == 30


def test_the_window_applies_another_change_and_a_ceiling_of_ninety_seconds_stays_ninety(window: Any, engine: Any,
                                                                                       run: Any) -> None:
    pane = window.settings
    engine.change_settings({"ceiling_seconds": 90})
    pane.load(window.controller.setting_values())
    pane.editors["ask_at_ceiling"].check.setChecked(True)

    async def apply() -> None:
        pane.apply_button.click()
        await wait_for(lambda: pane.result.text().startswith("Saved"), 10, "the settings to be applied")

    run(apply())
    assert engine.settings.ceiling == CeilingSettings(ceiling_seconds=90, ask_at_ceiling=True)
    assert json.loads(engine.paths.settings_file.read_text())["ceiling"]["ceiling_seconds"] == 90


def _fill(dialog: AddHostDialog, **values: str) -> None:
    for key, value in values.items():
        widget = dialog.inputs[key]
        if hasattr(widget, "setText"):
            widget.setText(value)
        elif key == "provider":
            dialog.select_provider(value)
        else:
            widget.setCurrentText(value)


def _errors(dialog: AddHostDialog) -> dict[str, str]:
    return {k: label.text() for k, label in dialog.errors.items() if label.isVisible()}


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"name": ""}, "name", "cannot be empty"),
        ({"name": "a/b"}, "name", "cannot contain slashes"),
        ({"name": "ok", "port": "abc"}, "port", "whole number from 1 to 65535"),
        ({"name": "ok", "port": "70000"}, "port", "whole number from 1 to 65535"),
        ({"name": "ok", "address": "two words"}, "address", "without spaces"),
        ({"name": "ok", "idle_window_seconds": "-5"}, "idle_window_seconds", "positive number of seconds"),
        ({"name": "ok", "identity": "-----BEGIN OPENSSH PRIVATE KEY-----"}, "identity", "never the key itself"),
        ({"name": "ok", "provider": "local", "address": "10.0.0.1"}, "general", "takes no address"),
    ],
)
def test_add_host_dialog_rejects_bad_fields(engine: Any, qtbot: Any, values: dict[str, str], field: str,
                                            words: str) -> None:
    hosts = engine.hosts
    if values.get("provider") == "local":  # offered only while this computer is not a host yet
        hosts = hosts.remove(next(h.name for h in hosts.hosts if h.provider == "local"))
    dialog = AddHostDialog(hosts)
    qtbot.addWidget(dialog)
    dialog.show()
    _fill(dialog, **values)
    dialog.ok_button.click()
    assert dialog.isVisible() and dialog.host is None
    errors = _errors(dialog)
    assert field in errors, errors
    assert words in errors[field]


def test_add_host_dialog_rejects_a_duplicate_name(engine: Any, qtbot: Any) -> None:
    existing = engine.hosts.hosts[0].name
    dialog = AddHostDialog(engine.hosts)
    qtbot.addWidget(dialog)
    dialog.show()
    _fill(dialog, name=existing.upper(), provider="ssh", address="127.0.0.1")
    dialog.ok_button.click()
    assert "already a host called" in _errors(dialog)["name"]


def test_add_host_through_the_window(window: Any, engine: Any, run: Any) -> None:
    async def add() -> None:
        dialog = window.open_add_dialog()
        _fill(dialog, name="build-box", provider="ssh", address="127.0.0.1", port="1", user="dev")
        dialog.ok_button.click()
        await wait_for(lambda: window.model.row_of("build-box") is not None, 5, "the new row")

    run(add())
    assert engine.hosts.get("build-box") == Host(name="build-box", provider="ssh", address="127.0.0.1", port=1,
                                                 user="dev")
    assert window.detail.title.text() == "build-box"
    assert "build-box" in engine.paths.hosts_file.read_text()


QUESTION = HostKeyQuestion("10.1.2.3", 2222, "ssh-ed25519", "SHA256:q8H0bQ0qK1m1m2oXkz4vU5y3d2C8rB3a4Qe7nYt9wXc")


@pytest.mark.parametrize("trust", [True, False])
def test_host_key_dialog_shows_fingerprint_and_answers(qapp: Any, run: Any, trust: bool) -> None:
    async def ask() -> bool:
        answer = asyncio_task(ask_host_key("build-box", QUESTION))
        dialog = await wait_for(lambda: _open_dialog(), 5, "the host-key dialog")
        assert dialog.fingerprint.text().replace("\u200b", "") == QUESTION.fingerprint  # wraps, whole
        assert "10.1.2.3:2222" in dialog.findChildren(QLabel)[0].text()
        (dialog.trust_button if trust else dialog.cancel_button).click()
        return await answer

    assert run(ask()) is trust


def asyncio_task(coro: Any) -> Any:
    import asyncio

    return asyncio.ensure_future(coro)


def _open_dialog() -> HostKeyDialog | None:
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, HostKeyDialog) and widget.isVisible():
            return widget
    return None


def test_provider_reference_fields_are_each_providers_own_and_required_where_needed(engine: Any,
                                                                                     qtbot: Any) -> None:
    """The dialog asks each provider for its spec's reference fields, with their words, and only those."""
    from workroom.core.provider_specs import PROVIDER_SPECS
    from workroom.ui.host_dialog import AddHostDialog, host_from_fields, ref_key

    dialog = AddHostDialog(engine.hosts)
    qtbot.addWidget(dialog)
    dialog.show()
    asked_somewhere = set()
    combo = dialog.inputs["provider"]
    offered = [combo.itemData(i) for i in range(combo.count())]  # type: ignore[union-attr]
    for provider in offered:
        spec = PROVIDER_SPECS[provider]
        dialog.select_provider(provider)
        shown = {key for key, widget in dialog.inputs.items() if key.startswith("ref_") and widget.isVisible()}
        assert shown == {ref_key(field) for field in spec.reference}, provider
        for field in spec.reference:
            help_label = dialog.ref_help[field.name]
            assert help_label.isVisible() and help_label.text() == code_text(field.help)
            assert field.label in dialog.inputs[ref_key(field)].placeholderText()  # type: ignore[union-attr]
            asked_somewhere.add(field.name)
    assert asked_somewhere == {"machine", "health_url", "proxy_url", "idle_clock_url", "workspace", "codespace"}
    base = {"name": "sim1", "address": "10.0.0.2"}
    missing = host_from_fields({**base, "provider": "simbox"}, engine.hosts)
    assert missing == {"ref_health_url": "A simbox host needs its health page URL here."}
    not_a_url = host_from_fields({**base, "provider": "simbox", "ref_health_url": "127.0.0.1:8765"}, engine.hosts)
    assert not_a_url == {"ref_health_url": "The health page URL must be an http:// or https:// address "
                                           "(got '127.0.0.1:8765')."}
    host = host_from_fields({**base, "provider": "simbox", "ref_health_url": "http://127.0.0.1:8765/"}, engine.hosts)
    assert not isinstance(host, dict) and host.reference == {"health_url": "http://127.0.0.1:8765/"}
    metered = host_from_fields({**base, "provider": "request-metered", "ref_proxy_url": "https://a.example.dev",
                                "ref_health_url": "http://left.over/"}, engine.hosts)
    assert not isinstance(metered, dict) and metered.reference == {"proxy_url": "https://a.example.dev"}
    dialog.inputs["name"].setText("sim1")  # type: ignore[union-attr]
    dialog.select_provider("simbox")
    dialog.try_accept()
    assert dialog.errors["ref_health_url"].isVisible()


def test_the_provider_list_offers_no_second_local_and_marks_the_simulator(engine: Any, qtbot: Any) -> None:
    """This computer is a host already, so "local" is not offered again; the developers' simulator appears only
    where it is installed (here: the dev extra; never in the shipped app, which lacks it), marked as such."""
    from workroom.core.hosts import LOCAL_PROVIDER
    from workroom.ui.host_dialog import AddHostDialog, provider_choices

    assert any(h.provider == LOCAL_PROVIDER for h in engine.hosts.hosts)
    dialog = AddHostDialog(engine.hosts)
    qtbot.addWidget(dialog)
    combo = dialog.inputs["provider"]
    labels = {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}  # type: ignore[union-attr]
    assert LOCAL_PROVIDER not in labels
    assert "simulator" in labels["simbox"] and labels["ssh"] == "ssh"
    assert "simbox" not in provider_choices(has_local=True, simulator_installed=False)
    assert provider_choices(has_local=False, simulator_installed=False)[-1] == LOCAL_PROVIDER
    assert dialog.fields()["provider"] == combo.itemData(0)  # type: ignore[union-attr]
    only_mine = next(t for t in ("Only the login user's processes",) if dialog.inputs["agent_candidates"]
                     .findText(t) >= 0)  # type: ignore[union-attr]
    assert only_mine
