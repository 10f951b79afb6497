"""One QIcon per badge kind, loaded once from resources/ (a missing icon raises, never a blank)."""

from __future__ import annotations

from PySide6.QtGui import QIcon

from workroom.core.badge import BadgeKind
from workroom.resources import badge_icon

_cache: dict[BadgeKind, QIcon] = {}


def icon_for(kind: BadgeKind) -> QIcon:
    icon = _cache.get(kind)
    if icon is None:
        icon = _cache[kind] = badge_icon(kind)
    return icon
