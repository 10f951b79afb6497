"""Every piece of text the window, the tray and the dialogs show goes through here, as plain text.

Qt renders a label's text as rich text when its format is `AutoText` and `Qt::mightBeRichText` guesses so,
and every tooltip likewise. Text from a host, a file or a process (an SSH banner, an error, a busy reason, a
host's name from hosts.json) can then draw a heading, offer a link, or load `<img src=…>` from a local file on
the GUI thread: a FIFO there hangs the app for good. So (docs/ui.md, "Text is never markup"):

- a label is made here, plain (`plain_label`), or, where the app draws its own markup (bold words, a table),
  rich with every outside value escaped (`rich_label` and `markup`);
- a tooltip is handed to Qt escaped (`tooltip`, `set_tooltip`): Qt renders tooltips as rich text by guessing,
  so a plain one is wrapped as escaped rich text that cannot guess wrong;
- a message box is plain, its informative text too (`message_box`: Qt gives that label `AutoText`);
- a menu entry's `&` is doubled (`action_text`), so a host name shows as written, not as a shortcut mark.

`tests/unit/test_plain_widgets_only.py` holds the ui modules to it; `tests/gui/test_hostile_text.py` walks every
label, tooltip, notice, card and dialog with hostile text and a FIFO whose opening it detects.
"""

from __future__ import annotations

import html
import sys

from PySide6 import QtGui
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QMessageBox, QSystemTrayIcon, QToolTip, QWidget

INFORMATIVE_LABEL = "qt_msgbox_informativelabel"
"""The object name Qt gives a message box's informative-text label (created with `AutoText`)."""


def _label(text: str, parent: QWidget | None, fmt: Qt.TextFormat) -> QLabel:
    label = QLabel(parent)
    label.setTextFormat(fmt)  # before the text: never a moment of guessing
    label.setText(text)
    return label


def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A label that shows `text`, and whatever is set on it later, exactly as written."""
    return _label(text, parent, Qt.TextFormat.PlainText)


def escape(text: object) -> str:
    """`text` as rich text that shows it as written (for `markup` and `rich_label` callers' values)."""
    return html.escape(str(text), quote=True)


def markup(template: str, *values: object) -> str:
    """The app's own rich text `template` with `{}` filled by `values`, each escaped: markup stays the
    app's, never a value's."""
    return template.format(*(escape(v) for v in values))


def rich_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A label for the app's own markup (built with `markup`/`escape`): rich text, always, never guessed."""
    return _label(text, parent, Qt.TextFormat.RichText)


def code_text(text: str) -> str:
    """Plain `text` in which `like this` names a command (the provider table's help, a picker's note), as rich
    text: escaped, each backtick pair shown as code instead of as literal backticks; an odd one stays."""
    parts = escape(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no pairs to make
        return escape(text)
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def code_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A label for plain text naming commands in backticks (`code_text`)."""
    return rich_label(code_text(text), parent)


def tooltip(text: str) -> str:
    """`text` as a tooltip Qt shows as written. Qt guesses plain or rich for tooltips, and guesses rich only
    for a `<` (or `&lt;`): text with neither is left as it is, else it becomes escaped rich text."""
    if "<" not in text and "&" not in text:
        return text
    return QtGui.Qt.convertFromPlainText(text, Qt.WhiteSpaceMode.WhiteSpaceNormal)


def tray_tooltip(text: str, platform: str = sys.platform) -> str:
    """The menu-bar icon's tooltip: macOS shows it as plain text (an NSStatusItem's tool tip); elsewhere Qt's
    own tooltip or the tray host shows it, as rich text when it guesses so."""
    return text if platform == "darwin" else tooltip(text)


def set_tray_tooltip(icon: QSystemTrayIcon, text: str) -> None:
    """Set the menu-bar icon's tooltip (`tray_tooltip`), only when its words change."""
    shown = tray_tooltip(text)
    if icon.toolTip() != shown:
        icon.setToolTip(shown)


def set_tooltip(target: QWidget | QAction | QSystemTrayIcon, text: str) -> None:
    target.setToolTip(tooltip(text))


def show_tooltip(where: QPoint, text: str, widget: QWidget) -> None:
    """Show `text` as a tooltip now (a hover over part of a widget), as written."""
    QToolTip.showText(where, tooltip(text), widget)


def action_text(text: str) -> str:
    """`text` for a menu entry or button: `&` doubled, so none becomes a keyboard shortcut's mark."""
    return text.replace("&", "&&")


def message_box(icon: QMessageBox.Icon, title: str, text: str, *, informative: str = "",
                parent: QWidget | None = None) -> QMessageBox:
    """A message box whose text and informative text are plain."""
    box = QMessageBox(icon, title, "", QMessageBox.StandardButton.NoButton, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    if informative:
        set_informative(box, informative)
    return box


def set_informative(box: QMessageBox, text: str) -> None:
    box.setInformativeText(text)
    label = box.findChild(QLabel, INFORMATIVE_LABEL)
    if label is not None:
        label.setTextFormat(Qt.TextFormat.PlainText)


def fit_height(dialog: QWidget) -> None:
    """Grow `dialog` to show every wrapped line of its labels (dialogs do not follow height-for-width on their
    own): after a label's text grew (an error said under a button)."""
    layout = dialog.layout()
    if layout is None:
        return
    layout.activate()
    need = layout.totalHeightForWidth(dialog.width()) if layout.hasHeightForWidth() else layout.sizeHint().height()
    if need > dialog.height():
        dialog.resize(dialog.width(), need)
