"""The house's size rules (docs/architecture.md, "Sizes"): each module of sessions/ does one job in at most 450
lines, and no product module anywhere (the app, the agent, the tools) passes 800. Counted as `wc -l` counts."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = (ROOT / "app" / "workroom", ROOT / "agent_bundle" / "wr_agent", ROOT / "tools")
SESSIONS = ROOT / "app" / "workroom" / "sessions"
SESSIONS_MAX, ANY_MAX = 450, 800


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_in_sessions_is_at_most_450_lines() -> None:
    modules = _modules(SESSIONS)
    assert len(modules) > 10  # the folder is where it was: a check of nothing would pass
    over = {p.name: _lines(p) for p in modules if _lines(p) > SESSIONS_MAX}
    assert not over, f"sessions/ modules over {SESSIONS_MAX} lines (split by what they do): {over}"


def test_no_product_module_is_over_800_lines() -> None:
    modules = [p for folder in PRODUCT if folder.is_dir() for p in _modules(folder)]
    assert len(modules) > 100
    over = {str(p.relative_to(ROOT)): _lines(p) for p in modules if _lines(p) > ANY_MAX}
    assert not over, f"product modules over {ANY_MAX} lines: {over}"


def test_the_count_is_the_file_line_count(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("a = 1\n" * (SESSIONS_MAX + 1))
    assert _lines(sample) == SESSIONS_MAX + 1 > SESSIONS_MAX  # one line over is over
