"""Fixtures for the simulator's integration tests: a real simbox daemon per test, always taken down."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import simbox


@pytest.fixture
def make_simbox(tmp_path: Path) -> Iterator[Callable[..., simbox.SimboxState]]:
    """Factory: `make_simbox(boxes=1, window=2.0, **kw)`; every simbox made is taken down at teardown."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the simbox creates network namespaces, cgroups and users")
    made: list[Path] = []

    def make(boxes: int = 1, window: float = 2.0, **kw: Any) -> simbox.SimboxState:
        home = tmp_path / f"home{len(made)}"
        made.append(home)
        return simbox.up(boxes, window, home=home, **kw)

    yield make
    for home in made:
        report = simbox.down(home=home)
        assert not report["problems"], report
