"""Readable in light and dark palettes: text on cards, error labels, the problems banner, the detail panel's
field names and the badge icons, measured on the rendered pixels (WCAG AA: 4.5:1 for text, 3:1 for icons)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from demo_states import AGENT_MONOTONIC, busy, every_state, make_snapshot
from gui_helpers import feed, region_contrast
from PySide6.QtCore import QPoint
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QApplication, QWidget
from workroom.core.badge import BadgeKind
from workroom.core.errors import UserError
from workroom.ui import styles
from workroom.ui.badge_icons import icon_for
from workroom.ui.host_dialog import AddHostDialog

pytestmark = pytest.mark.gui

AA_TEXT, AA_GRAPHICS = 4.5, 3.0


def dark_palette() -> QPalette:
    """A dark palette as a desktop in dark mode hands to Qt (window, base and text roles swapped)."""
    pal = QPalette()
    dark, darker, light = QColor(45, 45, 48), QColor(30, 30, 32), QColor(230, 230, 230)
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive, QPalette.ColorGroup.Disabled):
        for role, color in ((QPalette.ColorRole.Window, dark), (QPalette.ColorRole.WindowText, light),
                            (QPalette.ColorRole.Base, darker), (QPalette.ColorRole.AlternateBase, dark),
                            (QPalette.ColorRole.Text, light), (QPalette.ColorRole.Button, dark),
                            (QPalette.ColorRole.ButtonText, light), (QPalette.ColorRole.ToolTipBase, dark),
                            (QPalette.ColorRole.ToolTipText, light),
                            (QPalette.ColorRole.PlaceholderText, QColor(150, 150, 150))):
            pal.setColor(group, role, color)
    return pal


@pytest.fixture(params=["light", "dark"])
def palette_name(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[str]:
    original = qapp.palette()
    qapp.setStyle("Fusion")
    qapp.setPalette(dark_palette() if request.param == "dark" else qapp.style().standardPalette())
    yield request.param
    qapp.setPalette(original)
    qapp.setStyleSheet("")


def measured_contrast(widget: QWidget, top: QWidget) -> float:
    """Contrast of `widget`'s text as drawn inside `top`: its commonest pixel (background) against the
    pixel that differs most from it (the ink of the glyphs)."""
    image = top.grab().toImage()
    ratio = top.devicePixelRatioF()
    origin = widget.mapTo(top, QPoint(0, 0))
    x0, y0 = int(origin.x() * ratio), int(origin.y() * ratio)
    x1, y1 = x0 + int(widget.width() * ratio), y0 + int(widget.height() * ratio)
    return region_contrast(image, x0, y0, x1, y1)


def test_cards_errors_banner_and_fields_read_in_both_palettes(palette_name: str, engine: Any, qtbot: Any) -> None:
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    controller = AppController(engine)
    controller.engine.problems.append(UserError("Hosts file unreadable", "hosts.toml line 3: bad port.", "Fix it."))
    window = MainWindow(controller)
    qtbot.addWidget(window)
    window.resize(1100, 700)
    window.show()
    try:
        for snap in every_state().values():
            feed(engine, snap)
        feed(engine, make_snapshot("render-farm", "boxd", prompt=True, **busy(
            awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
            prompt_deadline=AGENT_MONOTONIC + 300)))
        card = window.cards.cards["render-farm"]
        card.show_error(UserError("Keep awake did not reach the host", "render-farm: timed out.", "Check it."))
        window.show_error(UserError("Could not connect", "gpu-box: refused.", "Check the address."))
        window.select_host("ci-runner")
        qtbot.wait(50)
        checks = {
            "card title": (card.title, card),
            "card body": (card.body, card),
            "card countdown": (card.countdown, card),
            "card error": (card.error, card),
            "action error": (window.action_error, window),
            "problems banner": (window.problems, window),
            "detail fields": (window.detail.fields, window),
        }
        measured = {what: round(measured_contrast(w, top), 2) for what, (w, top) in checks.items()}
        low = {what: ratio for what, ratio in measured.items() if ratio < AA_TEXT}
        assert not low, f"{palette_name}: below {AA_TEXT}:1: {low}"
        # The detail panel's field names use the muted colour; it must read too.
        muted = styles.muted_text(window.detail.palette())
        assert styles.contrast_ratio(muted, styles.window(window.detail.palette())) >= AA_TEXT
    finally:
        window.cards.timer.stop()


def test_dialog_error_labels_read_in_both_palettes(palette_name: str, engine: Any, qtbot: Any) -> None:
    styles.install()
    dialog = AddHostDialog(engine.hosts)
    qtbot.addWidget(dialog)
    dialog.inputs["name"].setText("gpu/box")  # type: ignore[union-attr]
    dialog.inputs["port"].setText("70000")  # type: ignore[union-attr]
    dialog.resize(640, dialog.sizeHint().height())
    dialog.show()
    dialog.try_accept()
    qtbot.wait(20)
    shown = [label for label in dialog.errors.values() if label.isVisible()]
    assert shown, "the dialog showed no error"
    for label in shown:
        ratio = measured_contrast(label, dialog)
        assert ratio >= AA_TEXT, f"{palette_name}: {label.objectName()} at {ratio:.2f}:1"


def test_badge_icons_stand_out_from_the_window_in_both_palettes(palette_name: str, qapp: QApplication) -> None:
    if QApplication.platformName() == "cocoa":
        pytest.skip("macOS tints template icons itself")
    background = styles.window(qapp.palette())
    for kind in BadgeKind:
        image = icon_for(kind).pixmap(36, 36).toImage().convertToFormat(QImage.Format.Format_ARGB32)
        ink = [image.pixelColor(x, y) for y in range(image.height()) for x in range(image.width())
               if image.pixelColor(x, y).alpha() == 255]
        assert ink, f"{kind}: no opaque pixels"
        assert min(styles.contrast_ratio(c, background) for c in ink) >= AA_GRAPHICS, (palette_name, kind)


def test_the_sheet_names_no_fixed_colour_for_text_and_follows_the_palette(qapp: QApplication) -> None:
    light = styles.stylesheet(qapp.style().standardPalette())
    dark = styles.stylesheet(dark_palette())
    assert light != dark
    for pal in (qapp.style().standardPalette(), dark_palette()):
        back = styles.card_background(pal)
        assert styles.contrast_ratio(styles.card_text(pal), back) >= AA_TEXT
        assert styles.contrast_ratio(styles.error_text(pal, back), back) >= AA_TEXT
        assert styles.contrast_ratio(styles.error_text(pal), styles.window(pal)) >= AA_TEXT
        sheet = styles.stylesheet(pal)
        balloon = sheet.split("QBalloonTip QLabel { color: ", 1)[1][:7]  # Qt's fallback notification
        assert styles.contrast_ratio(QColor(balloon), styles.BALLOON_BACKGROUND) >= AA_TEXT


@pytest.mark.parametrize("panel", [QColor(43, 43, 43), QColor(240, 240, 240)], ids=["dark panel", "light panel"])
def test_tray_icon_reads_on_dark_and_light_panels(panel: QColor, qapp: QApplication) -> None:
    """The panel's colour is unknown off macOS: on either, a good part of the icon (its dark ink on a light
    panel, its light rim on a dark one) stands out at 3:1. The window-palette icon alone fails on one."""
    from workroom.ui.badge_icons import tray_icon_for

    if QApplication.platformName() == "cocoa":
        pytest.skip("macOS tints template icons itself")
    for kind in BadgeKind:
        image = tray_icon_for(kind).pixmap(36, 36).toImage().convertToFormat(QImage.Format.Format_ARGB32)
        ink = [image.pixelColor(x, y) for y in range(image.height()) for x in range(image.width())
               if image.pixelColor(x, y).alpha() == 255]
        strong = [c for c in ink if styles.contrast_ratio(c, panel) >= AA_GRAPHICS]
        assert len(strong) >= len(ink) // 5, (kind, len(strong), len(ink))
