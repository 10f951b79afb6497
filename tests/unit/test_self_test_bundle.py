"""The self-test's bundle check reads the bundle a second time (to compare hashes); a FIFO swapped into its
place between the two reads is reported as a failed check, never waited on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.fifo import within
from workroom import agent_bundle
from workroom.self_test import check_agent_bundle

pytestmark = pytest.mark.unit


def test_the_bundle_check_passes_on_a_real_bundle(tmp_path: Path) -> None:
    result = check_agent_bundle(tmp_path)
    assert result.ok, result.detail


def test_a_fifo_swapped_in_after_the_first_read_fails_the_check_without_hanging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = agent_bundle.locate_agent_bundle
    swapped: list[Path] = []

    def locate_then_swap(cache_dir: Path | None = None) -> agent_bundle.AgentBundle:
        bundle = real(cache_dir)
        assert bundle.path is not None
        bundle.path.unlink()
        os.mkfifo(bundle.path)  # the swap: the real bundle was read, now a FIFO stands in its place
        swapped.append(bundle.path)
        return bundle

    monkeypatch.setattr(agent_bundle, "locate_agent_bundle", locate_then_swap)
    result = within(lambda: check_agent_bundle(tmp_path), swapped)
    assert not result.ok and "not a regular file" in result.detail
