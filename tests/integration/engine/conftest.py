"""Engine fixtures: an app home per test, the real agent bundle, hosts on the real sshd."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.procs import kill_local_agents
from workroom.agent_bundle import AgentBundle, locate_agent_bundle
from workroom.paths import AppPaths, app_paths


@pytest.fixture(scope="session")
def agent_bundle(tmp_path_factory: pytest.TempPathFactory) -> AgentBundle:
    return locate_agent_bundle(tmp_path_factory.mktemp("bundle-cache"))


@pytest.fixture
def app_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppPaths]:
    """A home of the test's own; after it, this computer's agent that a connect or `workroom status` started
    there is killed by PID (it outlives the app by design, and a test's must not outlive the test)."""
    monkeypatch.setenv("WORKROOM_HOME", str(tmp_path / "home"))
    paths = app_paths().ensure()
    yield paths
    kill_local_agents(paths.state_dir)


