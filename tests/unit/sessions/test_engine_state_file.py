"""The engine's own state file (the last verdict seen per host) read at start: bad content or a FIFO in its
place is ignored with a warning, never waited on."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest
from fixtures.fifo import within
from workroom.agent_bundle import load_agent_bundle
from workroom.paths import HOME_ENV, AppPaths, app_paths
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.unit


@pytest.fixture
def paths(tmp_path: Path) -> AppPaths:
    return app_paths({HOME_ENV: str(tmp_path / "home")}).ensure()


def started(paths: AppPaths, fifos: list[Path]) -> Engine:
    engine = within(lambda: Engine(paths, load_agent_bundle(paths), hostname="me", auto_reconnect=False), fifos)
    asyncio.run(engine.close())
    return engine


def test_the_last_verdicts_are_read_back(paths: AppPaths) -> None:
    saved = {"box": {"verdict": "BUSY", "agent_monotonic": 12.5}, "bad": {"verdict": "MAYBE"}}
    (paths.state_dir / "last_verdicts.json").write_text(json.dumps(saved))
    # A record an older app wrote (no "doing") reads as doing what it reported.
    assert started(paths, []).last_verdicts == {"box": {**saved["box"], "doing": "BUSY"}}


@pytest.mark.parametrize("content", [b"{not json", b"[" * 100_000, b"\xff\xfe"])
def test_a_damaged_last_verdicts_file_is_ignored(paths: AppPaths, content: bytes) -> None:
    (paths.state_dir / "last_verdicts.json").write_bytes(content)
    assert started(paths, []).last_verdicts == {}


def test_a_fifo_as_the_last_verdicts_file_does_not_hang_the_start(paths: AppPaths) -> None:
    fifo = paths.state_dir / "last_verdicts.json"
    os.mkfifo(fifo)
    assert started(paths, [fifo]).last_verdicts == {}
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left alone
