"""The remembered agent places (providers/agent_sockets.py): a hint that loses nothing when it is wrong."""

from __future__ import annotations

import json
from pathlib import Path

from workroom.providers.agent_sockets import FILE_NAME, MAX_HOSTS, AgentPlace, AgentSockets

BINDING = "0123456789abcdef" * 2
PLACE = AgentPlace("/home/u/.local/state/wr-agent/agent.sock", "/home/u/.local/share/wr-agent/wr-agent.pyz",
                   "the agent's own supervisor", BINDING)


def test_a_place_is_kept_across_runs_and_forgotten(tmp_path: Path) -> None:
    AgentSockets(tmp_path).remember("box1", PLACE)
    assert AgentSockets(tmp_path).get("box1") == PLACE
    assert (tmp_path / FILE_NAME).stat().st_mode & 0o077 == 0
    again = AgentSockets(tmp_path)
    again.remember("box1", None)
    assert AgentSockets(tmp_path).get("box1") is None


def test_a_place_the_app_would_not_use_is_neither_kept_nor_read(tmp_path: Path) -> None:
    memo = AgentSockets(tmp_path)
    memo.remember("box1", AgentPlace("relative.sock", "/b", binding=BINDING))
    memo.remember("box2", AgentPlace("/s\x1b[31m", "/b", binding=BINDING))
    memo.remember("box3", AgentPlace("/s", "/b"))  # bound to nothing: never knocked on
    assert not (tmp_path / FILE_NAME).exists()
    (tmp_path / FILE_NAME).write_text(json.dumps({"hosts": {
        "a": {"socket": "/s", "bundle": "/b", "binding": BINDING}, "b": {"socket": "/s"}, "c": "x", "d": None,
        "e": {"socket": "/s", "bundle": "/b"}, "f": {"socket": "/s", "bundle": "/b", "binding": "x" * 32}}}))
    fresh = AgentSockets(tmp_path)
    assert fresh.get("a") == AgentPlace("/s", "/b", binding=BINDING)
    assert all(fresh.get(name) is None for name in "bcdef")  # "e": an older file's place, bound to nothing


def test_a_file_that_cannot_be_read_or_written_costs_nothing_but_the_hint(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).mkdir()  # a folder where the file should be: unreadable as one, unwritable over
    memo = AgentSockets(tmp_path)
    assert memo.get("box1") is None
    memo.remember("box1", PLACE)  # logged, not raised
    assert memo.get("box1") == PLACE  # this run still has it


def test_the_file_is_bounded(tmp_path: Path) -> None:
    memo = AgentSockets(tmp_path)
    for i in range(MAX_HOSTS + 5):
        memo.remember(f"h{i}", PLACE)
    assert len(json.loads((tmp_path / FILE_NAME).read_text())["hosts"]) == MAX_HOSTS
