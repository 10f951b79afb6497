"""Long unbroken words (SHA256 fingerprints, paths, URLs) wrap instead of running off a panel.

Qt's labels break lines only between words, so a 50-character fingerprint or a deep path overflows the
360 px detail panel. `breakable` puts zero-width spaces (U+200B) into such words after their separators (and
every `CHUNK` characters where there are none); they draw as nothing. Text copied from the app's own labels
has them taken out again (`install_clipboard_cleaner`), so a copied fingerprint is the fingerprint.
"""

from __future__ import annotations

import re

from PySide6.QtGui import QClipboard, QGuiApplication

ZWSP = "\u200b"
LONG = 24
"""A word longer than this may not fit beside a label in the detail panel."""
CHUNK = 16
_WORD = re.compile(rf"\S{{{LONG + 1},}}")
_AFTER = re.compile(r"([/:.\-_=+@,;])")


def _split(word: str) -> str:
    marked = _AFTER.sub(lambda m: m.group(1) + ZWSP, word)
    parts = []
    for piece in marked.split(ZWSP):
        parts += [piece[i:i + CHUNK] for i in range(0, len(piece), CHUNK)] or [""]
    return ZWSP.join(parts)


def breakable(text: str) -> str:
    """`text` with line-break chances inside its long words; nothing else changes."""
    return _WORD.sub(lambda m: _split(m.group(0)), text)


_installed: list[QClipboard] = []
PROCESS_LOCAL_CLIPBOARDS = frozenset({"offscreen", "minimal"})
"""Qt platforms whose clipboard belongs to this process alone (every change is the app's own), where
`ownsClipboard()` answers False all the same."""


def install_clipboard_cleaner() -> None:
    """Text this app puts on the clipboard loses the zero-width spaces `breakable` added (once per process)."""
    clipboard = QGuiApplication.clipboard()
    if clipboard is None or clipboard in _installed:
        return
    _installed.append(clipboard)

    def clean() -> None:
        text = clipboard.text()
        ours = clipboard.ownsClipboard() or QGuiApplication.platformName() in PROCESS_LOCAL_CLIPBOARDS
        if ZWSP in text and ours:
            clipboard.setText(text.replace(ZWSP, ""))

    clipboard.dataChanged.connect(clean)
