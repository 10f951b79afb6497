"""A refused value names what the person typed, never pydantic's words (core.refusals); a name in wide characters
takes the cells it takes on a terminal (core.text_width), so `hosts list` and `status` stay aligned."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from workroom.core.hosts import Host
from workroom.core.refusals import refusal_words
from workroom.core.text_width import cells, pad

pytestmark = pytest.mark.unit

FLAGS = {"port": "--port", "idle_window_seconds": "--idle-window", "name": "NAME", "hourly_price": "PRICE"}


@pytest.mark.parametrize(("fields", "words"), [
    ({"port": 70000}, "--port: must be at most 65535 (got 70000)"),
    ({"port": 0}, "--port: must be at least 1 (got 0)"),
    ({"idle_window_seconds": -5}, "--idle-window: must be more than 0 (got -5)"),
    ({"idle_window_seconds": float("inf")}, "--idle-window: must be a finite number (got inf)"),
    ({"hourly_price": 1e9}, "PRICE: must be at most 100000 (got 1e+09)"),
    ({"name": "a/b"}, "NAME: a host name cannot contain slashes (got 'a/b')"),
])
def test_a_refused_host_value_names_the_flag_typed(fields: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Host.model_validate({"name": "box", "provider": "ssh", **fields})
    said = refusal_words(refused.value, FLAGS)
    assert said == words
    assert "pydantic" not in said and "errors.pydantic.dev" not in said and "type=" not in said


@pytest.mark.parametrize(("text", "width"), [("box1", 4), ("箱子一号", 8), ("ｂｏｘ", 6), ("café", 4),
                                             ("cafe\u0301", 4), ("", 0)])
def test_cells_count_what_a_terminal_shows(text: str, width: int) -> None:
    assert cells(text) == width


def test_padded_names_line_up_whatever_they_are_written_in() -> None:
    rows = [pad(name, 12) + "|" for name in ("box1", "箱子一号", "ｂｏｘ", "cafe\u0301")]
    assert {cells(row[:-1]) for row in rows} == {12}
    assert pad("a-name-longer-than-the-column", 12).startswith("a-name-longer-than-the-column")
