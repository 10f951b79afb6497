"""Finds the shipped resources (icons) wherever the app runs, and fails loudly when one is missing.

Three places, tried in order: a frozen app (`paths.frozen_data_dir()/resources`), an installed wheel
(`workroom/_resources`, put there by hatchling's force-include), a repository checkout (`<repo>/resources`).
A missing icon raises `MissingResourceError` naming the file, so a test fails instead of the menu bar
showing a blank. Qt is imported only by the functions that return QIcons.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from workroom.paths import frozen_data_dir

if TYPE_CHECKING:
    from PySide6.QtGui import QIcon

MENUBAR_SIZE = 18  # points; the @2x file is twice that in pixels
APP_ICON_SIZES = (512, 256, 128)
ENV_OVERRIDE = "WORKROOM_RESOURCES"  # a directory laid out like resources/, for packagers and tests


class MissingResourceError(FileNotFoundError):
    """A resource the app needs is not where it should be (a packaging fault, never a user's)."""


def _candidates() -> list[Path]:
    found: list[Path] = []
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        found.append(Path(override))
    frozen = frozen_data_dir()
    if frozen is not None:
        found.append(frozen / "resources")
    here = Path(__file__).resolve().parent
    found.append(here / "_resources")  # installed wheel
    found.append(here.parent.parent / "resources")  # repo checkout: <repo>/app/workroom/resources.py
    return found


def resources_dir() -> Path:
    """The first existing resources directory; raises naming every place looked at."""
    candidates = _candidates()
    for path in candidates:
        if (path / "icons").is_dir():
            return path
    looked = ", ".join(str(p) for p in candidates)
    raise MissingResourceError(f"no resources directory with icons/ found (looked in: {looked})")


def badge_kinds() -> list[str]:
    """Every badge kind's name (core.badge.BADGE_SPECS is the one list)."""
    from workroom.core.badge import BADGE_SPECS

    return [kind.value for kind in BADGE_SPECS]


def _kind_name(kind: object) -> str:
    """The icon's name for a badge kind (its row's `icon` in core.badge.BADGE_SPECS)."""
    from workroom.core.badge import BADGE_SPECS, BadgeKind

    if isinstance(kind, Enum) and isinstance(kind.value, str):
        kind = kind.value
    if isinstance(kind, str):
        try:
            return BADGE_SPECS[BadgeKind(kind)].icon
        except ValueError:
            return kind  # not a kind: looked up as a name, and reported missing if there is no such icon
    raise TypeError(f"not a badge kind: {kind!r}")


def badge_icon_paths(kind: object) -> tuple[Path, Path]:
    """(1x, 2x) template PNGs for a badge kind (a BadgeKind or its string value)."""
    name = _kind_name(kind)
    folder = resources_dir() / "icons" / "menubar"
    paths = (folder / f"badge_{name}Template.png", folder / f"badge_{name}Template@2x.png")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise MissingResourceError(f"menu-bar icon for badge {name!r} missing: {', '.join(missing)}")
    return paths


def app_icon_path(size: int = 512) -> Path:
    if size not in APP_ICON_SIZES:
        raise ValueError(f"app icon sizes are {APP_ICON_SIZES}, not {size}")
    path = resources_dir() / "icons" / "app" / f"workroom-{size}.png"
    if not path.is_file():
        raise MissingResourceError(f"app icon missing: {path}")
    return path


def badge_icon(kind: object) -> QIcon:
    """A template QIcon (isMask, so macOS tints it for light/dark menu bars) with both resolutions."""
    from PySide6.QtCore import QSize
    from PySide6.QtGui import QIcon

    one, two = badge_icon_paths(kind)
    icon = QIcon()
    icon.addFile(str(one), QSize(MENUBAR_SIZE, MENUBAR_SIZE))
    icon.addFile(str(two), QSize(2 * MENUBAR_SIZE, 2 * MENUBAR_SIZE))
    icon.setIsMask(True)
    if icon.isNull():
        raise MissingResourceError(f"Qt could not load the icon for badge {_kind_name(kind)!r} from {one}")
    return icon


def app_icon() -> QIcon:
    from PySide6.QtCore import QSize
    from PySide6.QtGui import QIcon

    icon = QIcon()
    for size in APP_ICON_SIZES:
        icon.addFile(str(app_icon_path(size)), QSize(size, size))
    return icon


def icon_problems() -> list[str]:
    """Every missing or unreadable icon, in words; empty when all are fine. Needs no QApplication."""
    from PySide6.QtGui import QImage

    problems: list[str] = []
    wanted: list[tuple[Path, int]] = []
    try:
        for kind in badge_kinds():
            one, two = badge_icon_paths(kind)
            wanted += [(one, MENUBAR_SIZE), (two, 2 * MENUBAR_SIZE)]
        wanted += [(app_icon_path(s), s) for s in APP_ICON_SIZES]
    except MissingResourceError as exc:
        return [str(exc)]
    for path, size in wanted:
        image = QImage(str(path))
        if image.isNull():
            problems.append(f"{path}: not a readable image")
        elif (image.width(), image.height()) != (size, size):
            problems.append(f"{path}: {image.width()}x{image.height()}, expected {size}x{size}")
        elif not _has_ink(image):
            problems.append(f"{path}: fully transparent")
    return problems


def _has_ink(image: object) -> bool:
    from PySide6.QtGui import QImage

    assert isinstance(image, QImage)
    img = image.convertToFormat(QImage.Format.Format_ARGB32)
    return any(img.pixelColor(x, y).alpha() > 0 for y in range(img.height()) for x in range(img.width()))
