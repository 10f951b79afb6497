"""One QIcon per badge kind, loaded once from resources/ (a missing icon raises, never a blank).

The files are macOS template images (black plus alpha). Only macOS tints those for a light or dark
menu bar, so elsewhere the icon is painted in the palette's text colour: dark ink in a light palette,
light ink in a dark one (docs/ui.md "Colours").
"""

from __future__ import annotations

import sys

from PySide6.QtGui import QColor, QIcon, QPalette

from workroom.core.badge import BadgeKind
from workroom.resources import badge_icon
from workroom.ui import styles

_templates: dict[BadgeKind, QIcon] = {}
_tinted: dict[tuple[BadgeKind, int], QIcon] = {}


def template_for(kind: BadgeKind) -> QIcon:
    icon = _templates.get(kind)
    if icon is None:
        icon = _templates[kind] = badge_icon(kind)
    return icon


def icon_for(kind: BadgeKind, palette: QPalette | None = None) -> QIcon:
    """The template icon on macOS; elsewhere the icon inked for `palette` (the application's by default)."""
    if sys.platform == "darwin":
        return template_for(kind)
    color = styles.icon_color(palette)
    key = (kind, color.rgba())
    icon = _tinted.get(key)
    if icon is None:
        icon = _tinted[key] = styles.tinted(template_for(kind), color)
    return icon


_tray: dict[BadgeKind, QIcon] = {}


def tray_icon_for(kind: BadgeKind) -> QIcon:
    """The menu-bar/tray icon: the template on macOS; elsewhere dark ink with a light rim, which reads on
    dark and light panels (the panel's colour is not the window palette's, and Qt cannot ask it)."""
    if sys.platform == "darwin":
        return template_for(kind)
    icon = _tray.get(kind)
    if icon is None:
        icon = _tray[kind] = styles.haloed(template_for(kind), QColor(20, 20, 20), QColor(245, 245, 245))
    return icon
