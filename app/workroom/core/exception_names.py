"""Error text fit for a person: no Python exception type names ("ConnectionError: …") in what the window,
the tray or a tooltip says. The full text stays available behind "Details…" and in the app's log.
"""

from __future__ import annotations

import re

_TYPE_NAME = re.compile(
    r"(?:\b[a-z_][\w]*\.)*\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Timeout)\b"
    r"(?:\(\))?:\s*"
)
_SPACES = re.compile(r"\s{2,}")


def without_exception_names(text: str) -> str:
    """`text` with every "SomeError: " prefix taken out ("gpu: OSError: refused" -> "gpu: refused")."""
    cleaned = _SPACES.sub(" ", _TYPE_NAME.sub("", text)).strip()
    return cleaned or text.strip()


def shows_exception_name(text: str) -> bool:
    return _TYPE_NAME.search(text) is not None
