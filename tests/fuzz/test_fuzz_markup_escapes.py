"""The escapers between host text and a markup reader, fuzzed: whatever the text, a markup reader (an XML
parser standing in for Pango's, Qt's own rich-text reader) gives back exactly that text, and the inert form
holds nothing any reader takes for syntax."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workroom.core.host_text import escape_markup, markup_inert

pytestmark = pytest.mark.unit

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
MARKUP_BITS = ["<", ">", "&", '"', "'", "&amp;", "&lt;", "<a href=", "</a>", "<img src=x>", "<span ", "<b>",
               "&#60;", "&#x3c;", "<!--", "]]>", "<![CDATA[", "\n", " ", "é", "\u202e"]
texts = st.lists(st.sampled_from(MARKUP_BITS) | st.text(max_size=8), max_size=30).map("".join)
# XML 1.0 forbids most C0 controls; Pango reads the same characters. Host text has them replaced already
# (core/host_text.plain), so the property is over the characters a markup reader can carry.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b-\x1f\ufffe\uffff\ud800-\udfff]")  # and CR, which XML reads as LF
xml_texts = texts.map(lambda t: _XML_ILLEGAL.sub("", t))


@FUZZ
@given(text=xml_texts)
def test_escaped_text_reads_back_as_itself(text: str) -> None:
    escaped = escape_markup(text)
    assert not set("<>\"'") & set(escaped)
    element = ET.fromstring(f"<markup>{escaped}</markup>")  # one text node: no element, no entity left over
    assert len(element) == 0 and (element.text or "") == text


@FUZZ
@given(text=texts)
def test_inert_text_has_no_syntax_and_keeps_everything_else(text: str) -> None:
    inert = markup_inert(text)
    assert not set("<>&") & set(inert)
    assert len(inert) == len(text)
    assert all(a == b for a, b in zip(text, inert, strict=True) if a not in "<>&")


@FUZZ
@given(text=xml_texts)
def test_a_tooltip_shows_the_words_as_written(qapp: Any, text: str) -> None:
    """What Qt's rich-text reader makes of `tooltip(text)` is `text` (white space aside: a tooltip wraps)."""
    from PySide6 import QtGui
    from workroom.ui.plain_widgets import tooltip

    shown = tooltip(text)
    if QtGui.Qt.mightBeRichText(shown):
        document = QtGui.QTextDocument()
        document.setHtml(shown)
        shown = document.toPlainText()
    squash = re.compile(r"[\s\u00a0\u2028\u2029]+")
    assert squash.sub(" ", shown).strip() == squash.sub(" ", text).strip()
