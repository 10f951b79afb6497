"""Text from other users made safe to show: process names on a shared host are chosen by whoever runs them.

A name such as `\\x1b]0;PWNED\\x07\\x1b[2J` would retitle and clear the terminal of anyone printing the status,
and bidirectional overrides can make a name read as something else. Control characters (C0, DEL, C1) and
bidi controls become `?`, and each text is bounded, before it leaves the agent; the app cleans again
before display and shows it as plain text.
"""

import re

MAX_CHARS = 200
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text, limit=MAX_CHARS):
    text = _UNSAFE.sub("?", str(text))
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"
