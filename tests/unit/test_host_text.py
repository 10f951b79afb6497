"""Text from a host is cleaned again when the app parses it (an older or hostile agent may not have)."""

from __future__ import annotations

import json

import pytest
from workroom.core.host_text import MAX_CHARS, plain
from workroom.core.protocol import Status

pytestmark = pytest.mark.unit

STATUS = {
    "verdict": "BUSY", "classifier_verdict": "BUSY", "stalled": False, "monotonic": 10.0, "awake_seconds": 5.0,
    "ceiling_seconds": 14400.0, "prompt_timeout_seconds": 600.0, "ask_at_ceiling": False,
    "awake_ceiling_exceeded": False, "prompt_pending": False, "suppressed": False, "workroom": "w",
    "agent": {"version": "0.1.0", "protocol": 1, "build": "0" * 64},
}


def test_terminal_escapes_and_bidi_controls_become_question_marks() -> None:
    assert plain("\x1b]0;PWNED\x07\x1b[2J") == "?]0;PWNED??[2J"
    assert plain("a\u202eb\u2066c\x9bd\x00") == "a?b?c?d?"
    assert plain("ünïcode ok <h1>") == "ünïcode ok <h1>"


def test_length_is_bounded() -> None:
    out = plain("x" * 10_000)
    assert len(out) == MAX_CHARS and out.endswith("\u2026")


def test_a_status_from_a_hostile_agent_is_clean_when_parsed() -> None:
    raw = dict(STATUS, busy_reasons=["cpu: \x1b[2J" + "y" * 5000] * 50, settings_error="\x1b]0;x\x07",
               keep_awake={"error": "\x1b[31mred", "interval_seconds": 60.0, "enabled": True})
    st = Status.model_validate_json(json.dumps(raw))
    assert len(st.busy_reasons) <= 16
    assert all("\x1b" not in r and len(r) <= MAX_CHARS for r in st.busy_reasons)
    assert st.settings_error == "?]0;x?" and st.keep_awake is not None and st.keep_awake.error == "?[31mred"


@pytest.mark.parametrize("text", ["\x1b]0;PWNED\x07", "a\u202eb", "\x7f\x80\x9f ok", "z" * 500, "plain"])
def test_the_agent_and_the_app_clean_alike(text: str) -> None:
    from wr_agent import host_text

    assert host_text.clean(text) == plain(text)

