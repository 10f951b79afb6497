"""Engine fixtures: an app home per test, the real agent bundle, hosts on the real sshd."""

from __future__ import annotations

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


