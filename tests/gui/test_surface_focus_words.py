"""Focus, layout and words on the window's surface: after Connect focus stays on the panel's buttons (not the
price box, its text selected); no Disconnect while a host-key question waits; Edit host's fixed name does not look
editable; the keep-awake check says "not known yet" in a sentence of its own; short busy stretches show on the
24 h strip. Real widgets (offscreen), fed the snapshots a session would publish."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from demo_states import busy, make_snapshot
from gui_helpers import feed
from PySide6.QtWidgets import QLabel
from workroom.core.connection import ConnectionState
from workroom.core.heartbeat_proof import HeartbeatProof, ProofState
from workroom.core.hosts import Host
from workroom.ui import row_text

pytestmark = pytest.mark.gui


def test_after_connect_focus_stays_on_the_panels_buttons(window: Any, engine: Any, qtbot: Any) -> None:
    name = "devbox"
    window.controller.add_host(Host(name=name, provider="ssh", address="10.9.9.9"), connect=False)
    feed(engine, make_snapshot(name, "ssh", ConnectionState.DISCONNECTED))
    window.select_host(name)
    window.activateWindow()
    detail = window.detail
    detail.connect_button.setFocus()
    assert detail.connect_button.hasFocus()
    feed(engine, make_snapshot(name, "ssh", ConnectionState.CONNECTING))  # what a click on Connect brings
    qtbot.wait(10)
    focused = window.focusWidget()
    assert focused is not window.timeline.price and window.timeline.price.lineEdit().selectedText() == ""
    assert focused is detail.disconnect_button, focused


def test_no_disconnect_while_a_host_key_question_waits(window: Any, engine: Any) -> None:
    snap = make_snapshot("newbox", "ssh", ConnectionState.HOST_KEY_QUESTION)
    feed(engine, snap)
    window.select_host("newbox")
    detail = window.detail
    assert detail.disconnect_button.isHidden() and detail.connect_button.isHidden()
    feed(engine, make_snapshot("newbox", "ssh", ConnectionState.PUSHING))
    assert not detail.disconnect_button.isHidden()


def test_edit_hosts_fixed_name_does_not_look_editable(window: Any, qtbot: Any) -> None:
    from workroom.ui import styles

    window.controller.add_host(Host(name="devbox", provider="ssh", address="10.9.9.9"), connect=False)
    window.select_host("devbox")
    dialog = window.open_edit_dialog()
    name = dialog.inputs["name"]
    assert name.isReadOnly() and not name.hasFrame() and not name.focusPolicy() & name.focusPolicy().TabFocus
    assert name.property(styles.ROLE_PROPERTY) == styles.READ_ONLY and "cannot change" in name.toolTip()
    assert dialog.fields()["name"] == "devbox"
    fresh = window.open_add_dialog()
    assert not fresh.inputs["name"].isReadOnly() and fresh.inputs["name"].hasFrame()
    dialog.reject()
    fresh.reject()


def test_keep_awake_not_known_yet_is_one_sentence() -> None:
    snap = make_snapshot("box", "boxd", **busy())
    proof = HeartbeatProof(state=ProofState.UNCONFIRMED, why="Not known yet: the activity the provider last saw "
                           "may have been this app's own traffic, so it does not prove the keep-awake; the next "
                           "reading will tell.")
    snap = dataclasses.replace(snap, connection=snap.connection.model_copy(update={"heartbeat_proof": proof}))
    words = row_text.keep_awake_seen_text(snap, time.monotonic())
    assert words.startswith("Not known yet: ") and words.count(":") == 1 and "unconfirmed yet" not in words.lower()



LONG_FINGERPRINT = "SHA256:" + "x3Jq9ZkPLmN2vB7cT5rW8yH1dF4gA6sE0uI9oQ2pK4"
LONG_PATH = "/home/someone-with-a-long-name/.local/share/wr-agent/releases/wr-agent-0.1.0-build-1234567890.pyz"


def _runs_fit(label: Any) -> list[str]:
    """The unbroken runs of a label's text (split where a line may break) wider than the label."""
    import re

    metrics = label.fontMetrics()
    runs = re.split(r"[\s\u200b]+", label.text())
    return [r for r in runs if r and metrics.horizontalAdvance(r) > label.width()]


def test_a_refused_login_names_the_apps_field_and_long_words_wrap(window: Any, engine: Any, qtbot: Any) -> None:
    from workroom.core.errors import ErrorInfo, Face
    from workroom.remote.ssh_errors import AuthFailed

    refused = AuthFailed("Login refused", f"127.0.0.1:22 did not accept user 'me' with {LONG_PATH}.",
                         "Check … (--identity FILE or IdentityFile in ~/.ssh/config).")
    snap = make_snapshot("devbox", "ssh", ConnectionState.ERROR, error=refused.info())
    feed(engine, snap)
    window.select_host("devbox")
    qtbot.wait(10)
    detail = window.detail
    detail.details_button.setChecked(True)
    qtbot.wait(10)
    shown = " ".join(w.text() for w in (detail.tooltip, detail.error, detail.error_details))
    assert "Key file field in Edit host" in shown and "--identity" not in shown, shown
    assert "--identity" in refused.hint  # the command line keeps its own words
    assert isinstance(refused.info(), ErrorInfo) and "Key file" in refused.info().advice(Face.APP)
    for label in (detail.tooltip, detail.error, detail.error_details):
        assert not _runs_fit(label), (label.objectName(), _runs_fit(label))
    question = make_snapshot("newbox", "ssh", ConnectionState.HOST_KEY_QUESTION)
    question = dataclasses.replace(question, connection=question.connection.model_copy(
        update={"host_key_fingerprint": LONG_FINGERPRINT + LONG_FINGERPRINT[7:]}))
    feed(engine, question)
    window.select_host("newbox")
    qtbot.wait(10)
    assert "SHA256:" in detail.tooltip.text() and not _runs_fit(detail.tooltip), _runs_fit(detail.tooltip)


def test_a_copied_fingerprint_is_whole(qapp: Any) -> None:
    from PySide6.QtGui import QGuiApplication
    from workroom.ui.breakable_words import ZWSP, breakable, install_clipboard_cleaner

    install_clipboard_cleaner()
    wrapped = breakable(LONG_FINGERPRINT + LONG_FINGERPRINT[7:])
    assert ZWSP in wrapped
    QGuiApplication.clipboard().setText(wrapped)
    assert QGuiApplication.clipboard().text() == LONG_FINGERPRINT + LONG_FINGERPRINT[7:]


def test_the_detail_panel_says_each_error_once(window: Any, engine: Any, qtbot: Any) -> None:
    """A lost host, a refused login and an unreadable provider: the error's words appeared twice in the panel (in
    the badge's explanation and again in the red line under it). Each visible label now says them once; the full
    text stays behind Details…."""
    from demo_states import every_state
    from workroom.core.errors import UserError
    from workroom.ui.breakable_words import ZWSP

    unreadable = make_snapshot("box9", "simbox", ConnectionState.UNREADABLE, error=UserError(
        "Could not read the provider", "The simulator at http://127.0.0.1:8765/ did not answer.", "").info())
    snapshots = [*every_state().values(), unreadable]
    with_errors = [s for s in snapshots if s.connection.error is not None]
    assert len(with_errors) >= 3
    detail = window.detail
    for snap in with_errors:
        feed(engine, snap)
        window.select_host(snap.host.name)
        qtbot.wait(10)
        visible = [w.text().replace(ZWSP, "") for w in detail.findChildren(QLabel) if w.isVisible()]
        message = snap.connection.error.message
        said = sum(text.count(message) for text in visible)
        assert said == 1, (snap.host.name, message, visible)
        assert detail.details_button.isVisible()
