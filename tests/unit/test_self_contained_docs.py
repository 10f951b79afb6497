"""The repository explains itself: code and docs cite only what is in it (docs/), never design notes,
style guides or numbered lessons kept elsewhere. Reasoning that matters lives in docs/ and is linked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PLACES = ("app", "agent_bundle", "tools", "tests", "docs", "build", "bench", "scripts", "README.md")
OUTSIDE_CITATION = re.compile(r"DESIGN(\.md)?\s*§|DESIGN\.md|STYLE\.md|\bseeds?\s*0\d\d\b|\blesson\s+\d", re.IGNORECASE)


def _files() -> list[Path]:
    found: list[Path] = []
    for place in PLACES:
        path = ROOT / place
        candidates = [path] if path.is_file() else path.rglob("*")
        found += [p for p in candidates if p.is_file() and p.suffix in (".py", ".md", ".sh", ".toml", ".spec", "")
                  and "__pycache__" not in p.parts and p != Path(__file__).resolve()]
    return found


def test_no_citation_of_notes_outside_the_repository() -> None:
    hits = []
    for path in _files():
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_CITATION.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert hits == []


# Built from parts, so this file does not itself read as a citation to a plain grep.
@pytest.mark.parametrize("line", [f"see {'DESIGN'}.md §5", f"({'DESIGN'} §4)", f"{'STYLE'}.md says",
                                  f"{'seed'} 004", f"{'lesson'} 3"])
def test_the_pattern_catches_each_form(line: str) -> None:
    assert OUTSIDE_CITATION.search(line)
