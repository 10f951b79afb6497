"""The fuzz tier: hypothesis-driven hostile input at every boundary that reads it (docs/security.md).

Bounded so the whole tier runs in well under a minute; runs with the rest of the suite in CI. It reuses
the agent-running helpers of the agent integration tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration" / "agent"))

from agentrun import Agent, agent_env, private_dir, serve_argv, stop, wait_answering


@pytest.fixture(scope="module")
def fuzz_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real agent for a module's examples (an example that hurt it fails every later one)."""
    import subprocess

    sock = os.path.join(private_dir(tmp_path_factory.mktemp("fuzz") / "run"), "agent.sock")
    proc = subprocess.Popen(serve_argv(sock, "--candidates", "user", "--no-heartbeat", "--test-min-duration", "1",
                                       "--health-listen", "127.0.0.1:0"), env=agent_env())
    try:
        wait_answering(sock, proc)
        yield Agent(sock, proc)
    finally:
        stop(proc)
