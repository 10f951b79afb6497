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
from workroom.core.timeline import SegmentKind
from workroom.ui import styles
from workroom.ui.badge_icons import icon_for
from workroom.ui.host_dialog import AddHostDialog
from workroom.ui.timeline_view import colour_for

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


def strip_record(problem: str | None) -> Any:
    """A day as the agent records it: no record for the first hours, then asleep, idle, busy, held."""
    import time

    from workroom.core.protocol import TimelineReply

    now = time.time()
    t, spans = now - 24 * 3600 + 6 * 3600, []
    for minutes, state, cls in ((120, "asleep", ""), (60, "idle", ""), (240, "busy", "cpu"), (20, "held", "cpu"),
                                (120, "busy", "tcp"), (30, "ceiling", "cpu"), (60, "idle", ""), (400, "asleep", "")):
        spans.append({"start": t, "end": t + minutes * 60, "state": state, "class": cls, "subject": ""})
        t += minutes * 60
    return TimelineReply.model_validate({"now": now, "spans": spans, "more_since": None, "problem": problem})


def test_why_awake_strip_and_its_problem_follow_the_palette(palette_name: str, engine: Any, qtbot: Any) -> None:
    """The strip's empty stretches (no record, the first hours here) take the palette's base, so a dark
    palette shows no bright bar; every stretch that means something stands out from that background; and
    the record's problem reads in the error colour."""
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    window = MainWindow(AppController(engine))
    qtbot.addWidget(window)
    window.show()
    try:
        for snap in every_state().values():
            feed(engine, snap)
        window.select_host("ci-runner")
        view = window.timeline
        view.show_record(strip_record("The agent's record file was unreadable; it started a new one."))
        qtbot.wait(50)
        assert view.summary is not None and view.summary.segments[0].kind is SegmentKind.OFFLINE
        strip = view.strip.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
        pixels = {strip.pixel(x, y) for y in range(strip.height()) for x in range(strip.width())}
        lum = sorted(styles.relative_luminance(QColor.fromRgb(p)) for p in pixels)
        back = styles.strip_background(view.palette())
        if palette_name == "dark":
            assert lum[-1] < 0.5, f"dark palette: the strip shows a near-white stretch (luminance {lum[-1]:.2f})"
        first = QColor.fromRgb(strip.pixel(strip.width() // 20, strip.height() // 2))  # no record
        assert styles.contrast_ratio(first, styles.window(view.palette())) < 1.6, (palette_name, first.name())
        for seg in view.summary.segments:
            drawn = colour_for(seg, view.palette())
            if seg.kind in (SegmentKind.BUSY, SegmentKind.CEILING, SegmentKind.ASLEEP):
                assert styles.contrast_ratio(drawn, back) >= AA_GRAPHICS, (palette_name, seg.kind, drawn.name())
            elif seg.kind in (SegmentKind.HELD, SegmentKind.IDLE):
                assert styles.contrast_ratio(drawn, back) >= 1.2, (palette_name, seg.kind, drawn.name())
        assert view.problem.text()
        ratio = measured_contrast(view.problem, view)  # the panel scrolls: the label may be out of view
        assert ratio >= AA_TEXT, f"{palette_name}: the strip's problem at {ratio:.2f}:1"
    finally:
        window.cards.timer.stop()


def test_no_view_names_a_colour_outside_styles() -> None:
    """Every colour of the app's views comes from ui/styles.py: a hex colour anywhere else is a colour that
    will not follow the palette (the why-awake strip once drew a white bar in dark mode)."""
    import re
    from pathlib import Path

    import workroom.ui

    hex_colour = re.compile(r"#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})\b")
    found = []
    for path in sorted(Path(workroom.ui.__file__).parent.glob("*.py")):
        if path.name == "styles.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if hex_colour.search(line):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_tray_menu_host_icons_are_inked_again_when_the_palette_turns_dark(qapp: QApplication) -> None:
    """The menu's per-host badge icons were inked once, for the palette at their first badge: after a switch to
    dark mode they stayed dark ink on a dark menu. Opening the menu inks them for the palette it has now; each
    icon's ink, as drawn into the menu, stands out 3:1 from the menu's background."""
    from demo_states import every_state
    from workroom.ui.tray import TrayController

    if QApplication.platformName() == "cocoa":
        pytest.skip("macOS tints template icons itself")
    original = qapp.palette()
    qapp.setStyle("Fusion")
    qapp.setPalette(qapp.style().standardPalette())
    tray = TrayController()
    try:
        for snapshot in every_state().values():
            tray.update(snapshot)
        qapp.setPalette(dark_palette())
        qapp.processEvents()
        assert styles.relative_luminance(styles.window(tray.menu.palette())) < 0.2
        tray.menu.aboutToShow.emit()  # the menu opening
        background = styles.window(tray.menu.palette())
        for name, menu in tray.host_menus.items():
            image = menu.icon().pixmap(36, 36).toImage().convertToFormat(QImage.Format.Format_ARGB32)
            ink = [image.pixelColor(x, y) for y in range(image.height()) for x in range(image.width())
                   if image.pixelColor(x, y).alpha() == 255]
            assert ink, name
            assert min(styles.contrast_ratio(c, background) for c in ink) >= AA_GRAPHICS, name
    finally:
        tray.icon.hide()
        qapp.setPalette(original)
