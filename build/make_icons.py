"""Draw the menu-bar template icons (one per badge kind, 1x and 2x) and the app icon into resources/.

Why a script: the PNGs are committed, but anyone can see how each was made and redraw them the same way
(QPainter on a QImage, offscreen, no fonts, so the pixels depend only on Qt's rasteriser).

    python build/make_icons.py            # (re)write resources/icons/...
    python build/make_icons.py --check    # exit 1 if a committed PNG differs from what the script draws

Menu-bar icons follow macOS template style: black plus alpha only, file names ending in `Template.png`
and `Template@2x.png`, drawn on an 18-point grid (18 px at 1x, 36 px at 2x).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QGuiApplication,
    QImage,
    QLinearGradient,
    QPainter,
    QPainterPath,
    QPen,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from workroom.core.badge import BADGE_SPECS  # noqa: E402 (the app's source, beside this script)

MENUBAR_DIR = ROOT / "resources" / "icons" / "menubar"
APP_DIR = ROOT / "resources" / "icons" / "app"

GRID = 18.0  # menu-bar icons are drawn in points on this grid
CENTER = QPointF(9.0, 9.0)
RADIUS = 6.5
STROKE = 1.6
BLACK = QColor(0, 0, 0, 255)

BADGE_ICONS = tuple(spec.icon for spec in BADGE_SPECS.values())
"""One icon per badge kind, named by its row in core/badge.py's BADGE_SPECS."""
APP_SIZES = (512, 256, 128)


def _pen(width: float = STROKE, style: Qt.PenStyle = Qt.PenStyle.SolidLine) -> QPen:
    pen = QPen(BLACK, width, style, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin)
    return pen


def _clear_pen(width: float) -> QPen:
    return QPen(QColor(0, 0, 0, 255), width, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)


def _filled_disc(p: QPainter) -> None:
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(BLACK))
    p.drawEllipse(CENTER, RADIUS + STROKE / 2, RADIUS + STROKE / 2)


def draw_idle(p: QPainter) -> None:
    """Hollow circle: reachable, nothing running."""
    p.setPen(_pen())
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawEllipse(CENTER, RADIUS, RADIUS)


def draw_busy(p: QPainter) -> None:
    """Filled circle: work is running and the host is kept awake."""
    _filled_disc(p)


def draw_busy_past_ceiling(p: QPainter) -> None:
    """Filled circle with clock hands cut out: busy beyond the awake ceiling."""
    _filled_disc(p)
    p.setCompositionMode(QPainter.CompositionMode.CompositionMode_Clear)
    p.setPen(_clear_pen(1.7))
    p.drawLine(CENTER, QPointF(9.0, 4.4))
    p.drawLine(CENTER, QPointF(12.6, 10.6))
    p.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)


def draw_asking(p: QPainter) -> None:
    """The past-ceiling clock with a notch cut out at the top right and a dot in it: a question waits."""
    draw_busy_past_ceiling(p)
    dot = QPointF(14.6, 3.4)
    p.setCompositionMode(QPainter.CompositionMode.CompositionMode_Clear)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(BLACK))
    p.drawEllipse(dot, 3.4, 3.4)
    p.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)
    p.drawEllipse(dot, 2.3, 2.3)


def draw_busy_not_kept_awake(p: QPainter) -> None:
    """Filled circle struck through by a slash with a gap around it: busy, but nothing keeps it awake."""
    _filled_disc(p)
    a, b = QPointF(2.2, 15.8), QPointF(15.8, 2.2)
    p.setCompositionMode(QPainter.CompositionMode.CompositionMode_Clear)
    p.setPen(_clear_pen(4.2))
    p.drawLine(a, b)
    p.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)
    p.setPen(_pen(1.6))
    p.drawLine(QPointF(1.5, 16.5), QPointF(16.5, 1.5))


def draw_asleep(p: QPainter) -> None:
    """Crescent moon: the host is asleep."""
    outer = QPainterPath()
    outer.addEllipse(CENTER, RADIUS + 0.6, RADIUS + 0.6)
    bite = QPainterPath()
    bite.addEllipse(QPointF(12.4, 6.0), RADIUS - 0.3, RADIUS - 0.3)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(BLACK))
    p.drawPath(outer.subtracted(bite))


def draw_offline(p: QPainter) -> None:
    """Dashed circle with a small cross: no connection to the host."""
    p.setBrush(Qt.BrushStyle.NoBrush)
    pen = _pen(1.5)
    pen.setCapStyle(Qt.PenCapStyle.FlatCap)
    pen.setDashPattern([2.0, 1.6])
    p.setPen(pen)
    p.drawEllipse(CENTER, RADIUS, RADIUS)
    p.setPen(_pen(1.5))
    d = 2.4
    p.drawLine(QPointF(9 - d, 9 - d), QPointF(9 + d, 9 + d))
    p.drawLine(QPointF(9 - d, 9 + d), QPointF(9 + d, 9 - d))


def draw_unknown(p: QPainter) -> None:
    """A question mark drawn from strokes (no font, so it is the same on every machine)."""
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.setPen(_pen(2.0))
    path = QPainterPath()
    arc = QRectF(5.4, 2.2, 7.2, 6.6)
    path.arcMoveTo(arc, 160.0)
    path.arcTo(arc, 160.0, -230.0)
    end = path.currentPosition()
    path.cubicTo(QPointF(end.x() - 1.2, end.y() + 1.0), QPointF(9.0, 10.0), QPointF(9.0, 11.6))
    p.drawPath(path)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(BLACK))
    p.drawEllipse(QPointF(9.0, 15.0), 1.35, 1.35)


DRAWERS: dict[str, Callable[[QPainter], None]] = {
    "idle": draw_idle,
    "busy": draw_busy,
    "busy_past_ceiling": draw_busy_past_ceiling,
    "asking": draw_asking,
    "busy_not_kept_awake": draw_busy_not_kept_awake,
    "asleep": draw_asleep,
    "offline": draw_offline,
    "unknown": draw_unknown,
}


def render_menubar(kind: str, scale: int) -> QImage:
    size = int(GRID) * scale
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.scale(scale, scale)
    DRAWERS[kind](p)
    p.end()
    return image


def render_app_icon(size: int) -> QImage:
    """A rounded square in night blue with a pale crescent over a lit dot: a workroom that sleeps honestly."""
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.scale(size / 512.0, size / 512.0)
    body = QRectF(32, 32, 448, 448)
    grad = QLinearGradient(QPointF(0, 32), QPointF(0, 480))
    grad.setColorAt(0.0, QColor(44, 62, 110))
    grad.setColorAt(1.0, QColor(18, 24, 48))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(grad))
    p.drawRoundedRect(body, 100, 100)
    moon = QPainterPath()
    moon.addEllipse(QPointF(240, 240), 150, 150)
    bite = QPainterPath()
    bite.addEllipse(QPointF(320, 180), 130, 130)
    p.setBrush(QBrush(QColor(236, 232, 214)))
    p.drawPath(moon.subtracted(bite))
    p.setBrush(QBrush(QColor(255, 196, 72)))
    p.drawEllipse(QPointF(360, 360), 44, 44)
    # Three small "stars" placed by a fixed rule (no randomness).
    p.setBrush(QBrush(QColor(236, 232, 214, 200)))
    for i in range(3):
        angle = math.radians(20 + 35 * i)
        p.drawEllipse(QPointF(330 + 90 * math.cos(angle), 110 + 40 * math.sin(angle)), 9, 9)
    p.end()
    return image


def menubar_name(kind: str, scale: int) -> str:
    return f"badge_{kind}Template{'@2x' if scale == 2 else ''}.png"


def all_images() -> dict[Path, QImage]:
    out: dict[Path, QImage] = {}
    missing = [icon for icon in BADGE_ICONS if icon not in DRAWERS]
    if missing:
        raise SystemExit(f"no drawing for badge icon(s) {', '.join(missing)}: add a draw_<icon> to DRAWERS")
    for kind in BADGE_ICONS:
        for scale in (1, 2):
            out[MENUBAR_DIR / menubar_name(kind, scale)] = render_menubar(kind, scale)
    for size in APP_SIZES:
        out[APP_DIR / f"workroom-{size}.png"] = render_app_icon(size)
    return out


def _png_bytes(image: QImage) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buf, "PNG"):
        raise RuntimeError("Qt could not encode a PNG")
    buf.close()
    return bytes(data.data())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed PNGs, write nothing")
    args = parser.parse_args(argv)
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    stale: list[str] = []
    for path, image in all_images().items():
        data = _png_bytes(image)
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(str(path.relative_to(ROOT)))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(path.relative_to(ROOT))
    if stale:
        print("differs from what build/make_icons.py draws:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
