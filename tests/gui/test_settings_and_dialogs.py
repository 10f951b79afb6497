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

pytestmark = pytest.mark.gui


def test_settings_pane_refuses_ten_seconds_visibly(window: Any, engine: Any, run: Any) -> None:
    pane = window.settings
    window.show_settings()
    before = engine.settings.ceiling
    pane.timeout_minutes.setValue(0)
    pane.timeout_seconds.setValue(10)
    assert pane.error.isVisible()
    assert pane.error.text() == "The prompt timeout must be between 30 s and 30 d; 10 s is not. Not applied."
    assert not pane.apply_button.isEnabled()
    pane.request_apply()  # even if asked directly, nothing goes out
    assert engine.settings.ceiling == before
    assert not engine.paths.settings_file.exists()
    pane.ceiling_hours.setValue(0)
    pane.ceiling_minutes.setValue(0)
    assert "The awake ceiling must be between 30 s and 30 d; 0 s is not" in pane.error.text()
    assert pane.bounds.text() == "Each between 30 s and 30 d."


def test_settings_pane_applies_and_persists(window: Any, engine: Any, run: Any) -> None:
    pane = window.settings

    async def apply() -> None:
        pane.ceiling_hours.setValue(1)
        pane.ceiling_minutes.setValue(30)
        pane.timeout_minutes.setValue(2)
        pane.timeout_seconds.setValue(0)
        pane.ask_mode.setChecked(True)
        assert not pane.error.isVisible()
        pane.apply_button.click()
        await wait_for(lambda: pane.result.text().startswith("Saved"), 10, "the settings to be applied")

    run(apply())
    assert engine.settings.ceiling == CeilingSettings(ceiling_seconds=5400, prompt_timeout_seconds=120,
                                                      ask_at_ceiling=True)
    saved = json.loads(engine.paths.settings_file.read_text())
    assert saved["ceiling"]["ceiling_seconds"] == 5400


def test_a_ceiling_in_seconds_survives_applying_another_change_and_an_edit_applies(qtbot: Any) -> None:
    from workroom.ui.settings_view import SettingsView

    view = SettingsView()
    qtbot.addWidget(view)
    view.show()
    applied: list[CeilingSettings] = []
    view.apply_requested.connect(applied.append)
    for seconds, words in ((90, "1 min 30 s"), (30, "30 s")):
        view.load(CeilingSettings.checked(ceiling_seconds=seconds, prompt_timeout_seconds=90.5))
        assert (view.ceiling_hours.value(), view.ceiling_minutes.value()) == (0, round(seconds / 60 + 0.01))
        view.ask_mode.setChecked(not view.ask_mode.isChecked())
        view.apply_button.click()
        assert applied[-1].ceiling_seconds == seconds and applied[-1].prompt_timeout_seconds == 90.5
        view.show_outcome({})
        # The boxes show whole minutes; the exact value is said under them.
        assert view.exact.isVisible() and f"The awake ceiling is {words}" in view.exact.text()
        assert "The prompt timeout is 1 min 30.5 s" in view.exact.text()
    view.ceiling_minutes.setValue(3)  # an edit is what the boxes say
    assert "awake ceiling" not in view.exact.text() and "prompt timeout" in view.exact.text()
    view.apply_button.click()
    assert applied[-1].ceiling_seconds == 180 and applied[-1].prompt_timeout_seconds == 90.5
    view.show_outcome({})
    view.ceiling_minutes.setValue(1)  # back to what the boxes showed when loaded: the loaded value again
    view.timeout_seconds.setValue(31)
    assert "The awake ceiling is 30 s" in view.exact.text() and "prompt timeout" not in view.exact.text()
    view.apply_button.click()
    assert applied[-1].ceiling_seconds == 30 and applied[-1].prompt_timeout_seconds == 91


def test_the_window_applies_an_untouched_ceiling_of_ninety_seconds_as_ninety(window: Any, engine: Any,
                                                                              run: Any) -> None:
    pane = window.settings
    pane.load(CeilingSettings.checked(ceiling_seconds=90))
    pane.ask_mode.setChecked(True)

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
    dialog = AddHostDialog(engine.hosts)
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
        assert dialog.fingerprint.text() == QUESTION.fingerprint
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
    for provider, spec in PROVIDER_SPECS.items():
        dialog.inputs["provider"].setCurrentText(provider)  # type: ignore[union-attr]
        shown = {key for key, widget in dialog.inputs.items() if key.startswith("ref_") and widget.isVisible()}
        assert shown == {ref_key(field) for field in spec.reference}, provider
        for field in spec.reference:
            assert dialog.ref_help[field.name].isVisible() and dialog.ref_help[field.name].text() == field.help
            assert field.label in dialog.inputs[ref_key(field)].placeholderText()  # type: ignore[union-attr]
            asked_somewhere.add(field.name)
    assert asked_somewhere == {"machine", "health_url", "proxy_url", "idle_clock_url"}
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
    dialog.inputs["provider"].setCurrentText("simbox")  # type: ignore[union-attr]
    dialog.try_accept()
    assert dialog.errors["ref_health_url"].isVisible()
