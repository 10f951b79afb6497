"""docs/cli.md says each thing once: no long stretch of words repeats within a table row (the `status` row once carried
its Coder/Codespaces sentence twice)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_nothing_is_said_twice_in_a_row_of_docs_cli() -> None:
    repeated = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        for i in range(0, max(0, len(line) - 120), 10):
            chunk = line[i:i + 120]
            if line.count(chunk) > 1:
                repeated.append(chunk)
                break
    assert repeated == []
