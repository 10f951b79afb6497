"""Text that came from a host, made safe to show in a terminal or a widget.

Busy reasons carry process names, which any user of a shared host can choose (an escape sequence that
retitles or clears a terminal, markup a rich-text label would render). The agent cleans them; the app
does it again on arrival, so an older or hostile agent cannot reach the screen with them either. The
rule matches the agent's (`wr_agent/plain_text.py`); see docs/security.md.
"""

from __future__ import annotations

import re

MAX_CHARS = 200
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: str, limit: int = MAX_CHARS) -> str:
    """`text` with control and bidi-control characters replaced by `?`, at most `limit` characters."""
    text = _UNSAFE.sub("?", text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
