"""Engine fixtures: an app home per test, the real agent bundle, hosts on the real sshd."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from workroom.agent_bundle import AgentBundle, locate_agent_bundle
from workroom.paths import AppPaths, app_paths


@pytest.fixture(scope="session")
def agent_bundle(tmp_path_factory: pytest.TempPathFactory) -> AgentBundle:
    return locate_agent_bundle(tmp_path_factory.mktemp("bundle-cache"))


@pytest.fixture
def app_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppPaths:
    monkeypatch.setenv("WORKROOM_HOME", str(tmp_path / "home"))
    return app_paths().ensure()


@pytest.fixture
def local_agents_reaped(app_home: AppPaths) -> Iterator[None]:
    """Local agents started by a test under its WORKROOM_HOME are killed by PID at teardown."""
    yield
    out = subprocess.run(["pgrep", "-f", f"{app_home.state_dir}/agent/wr-agent.pyz"], capture_output=True, text=True)
    for pid in out.stdout.split():
        try:
            import os

            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
