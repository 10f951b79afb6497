"""`WORKROOM_PALETTE=dark|light`: start the app in a fixed Fusion palette, whatever the desktop's theme.

For screenshots and the real-desktop test (tests/gui/test_real_desktop.py), which need the app in a dark
palette on a bare X server (Xvfb + openbox) that has no dark theme to hand Qt. Users leave it unset: the app
then follows the system palette (docs/ui.md "Colours"). Any other value is ignored.
"""

from __future__ import annotations

import os

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

PALETTE_ENV = "WORKROOM_PALETTE"


def dark_palette() -> QPalette:
    """A dark palette as a desktop in dark mode hands to Qt."""
    pal = QPalette()
    roles = QPalette.ColorRole
    colours = {
        roles.Window: QColor(45, 45, 48), roles.WindowText: QColor(230, 230, 230),
        roles.Base: QColor(30, 30, 32), roles.AlternateBase: QColor(40, 40, 43),
        roles.Text: QColor(230, 230, 230), roles.Button: QColor(55, 55, 58),
        roles.ButtonText: QColor(230, 230, 230), roles.Highlight: QColor(38, 110, 200),
        roles.HighlightedText: QColor(255, 255, 255), roles.ToolTipBase: QColor(55, 55, 58),
        roles.ToolTipText: QColor(230, 230, 230), roles.PlaceholderText: QColor(150, 150, 150),
        roles.Mid: QColor(70, 70, 74), roles.Dark: QColor(25, 25, 27),
        roles.Light: QColor(80, 80, 84), roles.Midlight: QColor(65, 65, 68),
    }
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive, QPalette.ColorGroup.Disabled):
        for role, colour in colours.items():
            pal.setColor(group, role, colour)
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(130, 130, 130))
    return pal


def apply_from_env(app: QApplication, environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """Apply WORKROOM_PALETTE's palette (Fusion style) to `app`; the name applied, or None (system palette)."""
    wanted = (os.environ if environ is None else environ).get(PALETTE_ENV, "").strip().lower()
    if wanted not in ("dark", "light"):
        return None
    app.setStyle("Fusion")
    app.setPalette(dark_palette() if wanted == "dark" else app.style().standardPalette())
    return wanted
