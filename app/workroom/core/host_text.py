"""Text that came from a host, made safe to show in a terminal or a widget.

Busy reasons carry process names, which any user of a shared host can choose (an escape sequence that
retitles or clears a terminal, markup a rich-text label would render). The agent cleans them; the app
does it again on arrival, so an older or hostile agent cannot reach the screen with them either. The
rule matches the agent's (`wr_agent/host_text.py`); see docs/security.md.
"""

from __future__ import annotations

import re

MAX_CHARS = 200
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: str, limit: int = MAX_CHARS) -> str:
    """`text` with control and bidi-control characters replaced by `?`, at most `limit` characters."""
    text = _UNSAFE.sub("?", text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


MARKUP_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
"""What a markup reader (Pango for freedesktop notification servers, Qt's rich text) takes as syntax, and the
entity each is written as so that it shows as itself."""
INERT = {"&": "\uff06", "<": "\uff1c", ">": "\uff1e"}
"""Look-alikes (full-width ＆ ＜ ＞) for text that goes where the app cannot tell whether markup is read."""
_MARKUP_CHARS = re.compile("[&<>\"']")
_INERT_CHARS = re.compile("[&<>]")


def escape_markup(text: str) -> str:
    """`text` for a reader of markup (a notification server that advertises `body-markup`): every character
    that markup reads as syntax written as its entity, so `<a href=…>` shows as those characters, not a link."""
    return _MARKUP_CHARS.sub(lambda m: MARKUP_ENTITIES[m.group(0)], text)


def markup_inert(text: str) -> str:
    """`text` with nothing any markup reader takes as syntax: `&`, `<` and `>` become look-alikes. For a place
    that may or may not read markup (a notification's summary, which the spec calls plain and some servers
    render; Qt's tray balloon, plain here and a freedesktop notification there): the same words either way."""
    return _INERT_CHARS.sub(lambda m: INERT[m.group(0)], text)
