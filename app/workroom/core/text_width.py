"""How wide text is on a terminal, so columns stay aligned whatever the names are written in: an East Asian wide
or full-width character takes two cells, a combining mark none (Python's `str.ljust` counts characters)."""

from __future__ import annotations

import unicodedata


def cells(text: str) -> int:
    """The terminal cells `text` takes."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def pad(text: str, width: int) -> str:
    """`text` and spaces up to `width` cells (never cut: a longer text pushes the next column, as ljust does)."""
    return text + " " * max(0, width - cells(text))
