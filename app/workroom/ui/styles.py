"""The app's only colours: derived from the system palette, so every view reads in light and dark mode.

Views never name a colour. They give a widget a style role (`set_role(label, ERROR)`), and one
application style sheet, built here from the current palette, colours every role. When the palette
changes (the user switches to dark mode) the sheet is rebuilt. Rich text that needs a colour inline
(the detail panel's field names) asks `muted_text(palette)`.

Every derived colour is checked against the background it sits on and pushed darker or lighter until
text reaches WCAG AA contrast (4.5:1); see docs/ui.md "Colours".
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QApplication, QWidget

from workroom.core.busy_reasons import ColourRole

AA_TEXT = 4.5
"""WCAG 2 AA contrast for body text."""
TARGET_TEXT = 5.5
"""What derived text colours aim for: AA plus a margin, because styles draw some panels (a tab page,
a frame) a shade lighter or darker than the window colour the sums start from."""
ROLE_PROPERTY = "wrRole"
ERROR = "error"
"""Red text for a problem (under a field, on a card, after an action)."""
MUTED = "muted"
"""Secondary text (field names, hints)."""
CARD = "card"
"""A prompt card: a warm tint of the window behind ordinary text."""
BANNER = "banner"
"""A problems banner: a red tint of the window behind ordinary text."""
PRIMARY = "primary"
"""The one prominent button of a panel: the palette's highlight colours."""

_ERROR_HUE = QColor(200, 0, 0)
_CARD_HUE = QColor(230, 170, 0)
BALLOON_BACKGROUND = QColor(0xFF, 0xFF, 0xE1)
"""The background Qt's QBalloonTip paints whatever the palette (qsystemtrayicon.cpp)."""


# -- contrast maths (WCAG 2) ------------------------------------------------------------------------

def relative_luminance(color: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    la, lb = relative_luminance(a), relative_luminance(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def is_dark(palette: QPalette) -> bool:
    return relative_luminance(palette.color(QPalette.ColorRole.Window)) < 0.2


def mix(a: QColor, b: QColor, amount_of_b: float) -> QColor:
    t = max(0.0, min(1.0, amount_of_b))
    return QColor.fromRgbF(a.redF() * (1 - t) + b.redF() * t, a.greenF() * (1 - t) + b.greenF() * t,
                           a.blueF() * (1 - t) + b.blueF() * t)


def readable_on(color: QColor, background: QColor, minimum: float = TARGET_TEXT) -> QColor:
    """`color`, moved toward black or white (whichever the background is not) until it reads on it."""
    target = QColor(255, 255, 255) if relative_luminance(background) < 0.2 else QColor(0, 0, 0)
    for step in range(21):
        candidate = mix(color, target, step / 20)
        if contrast_ratio(candidate, background) >= minimum:
            return candidate
    return target


# -- colours for each role --------------------------------------------------------------------------

def window(palette: QPalette) -> QColor:
    return palette.color(QPalette.ColorRole.Window)


def text(palette: QPalette) -> QColor:
    return palette.color(QPalette.ColorRole.WindowText)


def error_text(palette: QPalette, background: QColor | None = None) -> QColor:
    return readable_on(_ERROR_HUE, background or window(palette))


def muted_text(palette: QPalette, background: QColor | None = None) -> QColor:
    back = background or window(palette)
    return readable_on(mix(text(palette), back, 0.35), back)


def card_background(palette: QPalette) -> QColor:
    return mix(window(palette), _CARD_HUE, 0.28 if is_dark(palette) else 0.18)


def card_border(palette: QPalette) -> QColor:
    return mix(window(palette), _CARD_HUE, 0.7)


def banner_background(palette: QPalette) -> QColor:
    return mix(window(palette), _ERROR_HUE, 0.3 if is_dark(palette) else 0.12)


def card_text(palette: QPalette) -> QColor:
    return readable_on(text(palette), card_background(palette))


# -- the why-awake strip (painted, not styled) -------------------------------------------------------

NON_TEXT = 3.0
"""WCAG 2 non-text contrast: a stretch of the strip that carries meaning stands out this much from the
strip's background."""
_SERIES_HUES: dict[ColourRole, QColor] = {
    ColourRole.COMPUTE: QColor(47, 111, 219), ColourRole.DISK: QColor(123, 75, 209),
    ColourRole.WAITING: QColor(11, 143, 143), ColourRole.NETWORK: QColor(217, 119, 6),
    ColourRole.TERMINAL: QColor(42, 157, 58), ColourRole.AGENT: QColor(107, 114, 128),
    ColourRole.OTHER: QColor(55, 65, 81),
}
"""A hue per colour role (which class has which role: core/busy_reasons.py)."""
_CEILING_HUE = QColor(214, 40, 40)
_ASLEEP_HUE = QColor(63, 66, 112)


def strip_background(palette: QPalette) -> QColor:
    """Behind the strip, and what a stretch with no record (offline, before the agent ran) shows: the
    palette's base (the colour of an empty field)."""
    return palette.color(QPalette.ColorRole.Base)


def strip_frame(palette: QPalette) -> QColor:
    """The strip's outline and the legend swatches' borders."""
    return mix(strip_background(palette), palette.color(QPalette.ColorRole.Text), 0.45)


def strip_idle(palette: QPalette) -> QColor:
    """Idle: a step from no record toward the text colour, quiet but not empty."""
    return mix(strip_background(palette), palette.color(QPalette.ColorRole.Text), 0.18)


def strip_series(palette: QPalette, role: ColourRole) -> QColor:
    """A busy stretch: a fixed hue for what kept it busy, moved toward black or white until it stands out
    from the strip's background (3:1) in this palette."""
    return readable_on(_SERIES_HUES[role], strip_background(palette), NON_TEXT)


def strip_ceiling(palette: QPalette) -> QColor:
    """Kept awake past the ceiling: red, standing out from the background as a busy stretch does."""
    return readable_on(_CEILING_HUE, strip_background(palette), NON_TEXT)


def strip_asleep(palette: QPalette) -> QColor:
    """Asleep: a deep indigo (lightened in a dark palette until it stands out)."""
    return readable_on(_ASLEEP_HUE, strip_background(palette), NON_TEXT)


def strip_held(palette: QPalette) -> QColor:
    """Kept awake after work: a pale (in a dark palette, deep) tint of the CPU hue over the background."""
    return mix(strip_series(palette, ColourRole.COMPUTE), strip_background(palette), 0.55)


def stylesheet(palette: QPalette) -> str:
    """The application style sheet for `palette`: one rule per role, nothing else."""
    card = card_background(palette)
    banner = banner_background(palette)
    primary = palette.color(QPalette.ColorRole.Highlight)
    primary_text = readable_on(palette.color(QPalette.ColorRole.HighlightedText), primary)
    sel = f"[{ROLE_PROPERTY}=\"%s\"]"
    return "\n".join([
        f"QLabel{sel % ERROR} {{ color: {error_text(palette).name()}; }}",
        f"QLabel{sel % MUTED} {{ color: {muted_text(palette).name()}; }}",
        f"QFrame{sel % CARD} {{ background: {card.name()}; border: 1px solid {card_border(palette).name()};"
        " border-radius: 6px; }",
        f"QFrame{sel % CARD} QLabel {{ color: {card_text(palette).name()}; background: transparent; }}",
        f"QFrame{sel % CARD} QLabel{sel % ERROR} {{ color: {error_text(palette, card).name()}; }}",
        f"QPushButton{sel % PRIMARY} {{ background: {primary.name()}; color: {primary_text.name()};"
        f" font-weight: bold; padding: 5px 14px; border: 1px solid {primary.darker(130).name()};"
        " border-radius: 4px; }",
        f"QPushButton{sel % PRIMARY}:disabled {{ background: {mix(primary, window(palette), 0.6).name()}; }}",
        # A selected row (host table, lists) in the same highlight: some palettes' own highlighted text does
        # not read on their highlight (Fusion's light palette: white on #308cc6, 3.6:1).
        f"QAbstractItemView {{ selection-background-color: {primary.name()};"
        f" selection-color: {primary_text.name()}; }}",
        # Qt's own notification balloon (used where no notification service runs) paints a fixed pale
        # yellow; with an application sheet its labels would take the palette's text colour (light in dark
        # mode), so its text is made readable on that yellow.
        f"QBalloonTip QLabel {{ color: {readable_on(text(palette), BALLOON_BACKGROUND).name()}; }}",
        f"QLabel{sel % BANNER} {{ background: {banner.name()}; color: {readable_on(text(palette), banner).name()};"
        " padding: 6px; border-radius: 4px; }",
    ])


def set_role(widget: QWidget, role: str) -> None:
    """Give `widget` a style role; the application sheet colours it (and re-colours it on a palette change)."""
    widget.setProperty(ROLE_PROPERTY, role)
    widget.style().unpolish(widget)
    widget.style().polish(widget)


class _PaletteFollower(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is QApplication.instance() and event.type() == QEvent.Type.ApplicationPaletteChange:
            apply_stylesheet()
        return False


_follower: _PaletteFollower | None = None


def apply_stylesheet() -> None:
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    sheet = stylesheet(app.palette())
    if app.styleSheet() != sheet:
        app.setStyleSheet(sheet)


def install() -> None:
    """Style the running application from its palette, and follow palette changes. Idempotent."""
    global _follower
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    if _follower is None:
        _follower = _PaletteFollower()
        app.installEventFilter(_follower)
    apply_stylesheet()


# -- icons ------------------------------------------------------------------------------------------

def tinted(icon: QIcon, color: QColor, sizes: tuple[int, ...] = (18, 36)) -> QIcon:
    """A copy of a black-and-alpha template icon painted in `color` (for platforms that do not tint)."""
    out = QIcon()
    for size in sizes:
        source = icon.pixmap(size, size)
        pixmap = QPixmap(source.size())
        pixmap.fill(QColor(0, 0, 0, 0))
        painter = QPainter(pixmap)
        painter.drawPixmap(0, 0, source)
        painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
        painter.fillRect(pixmap.rect(), color)
        painter.end()
        out.addPixmap(pixmap)
    return out


def haloed(icon: QIcon, ink: QColor, halo: QColor, sizes: tuple[int, ...] = (18, 36)) -> QIcon:
    """The template icon in `ink` over a one-pixel rim of `halo`: it reads on a light and on a dark panel
    alike (the app cannot ask a Linux panel its colour)."""
    out = QIcon()
    for size in sizes:
        shape = tinted(icon, halo, (size,)).pixmap(size, size)
        body = tinted(icon, ink, (size,)).pixmap(size, size)
        pixmap = QPixmap(shape.size())
        pixmap.fill(QColor(0, 0, 0, 0))
        painter = QPainter(pixmap)
        step = max(1, size // 18)
        for dx in (-step, 0, step):
            for dy in (-step, 0, step):
                painter.drawPixmap(dx, dy, shape)
        painter.drawPixmap(0, 0, body)
        painter.end()
        out.addPixmap(pixmap)
    return out


def icon_color(palette: QPalette | None = None) -> QColor:
    """The ink for badge icons: the palette's text colour (dark ink on light, light ink on dark)."""
    pal = palette if palette is not None else QGuiApplication.palette()
    return text(pal)
