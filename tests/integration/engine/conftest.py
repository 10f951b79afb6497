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



@pytest.fixture
def fake_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The fake `coder` and `gh` first on PATH, sharing one state (tests/fixtures/fake_platforms.py): the real
    CLIs talk to cloud services that cannot run here."""
    import os

    from fixtures.fake_platforms import FakePlatform

    platform = FakePlatform(tmp_path / "platform", stats_interval=1.0, min_extension=30.0, start_delay=0.5)
    bindir = platform.install(tmp_path / "platform-bin")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    for name, value in platform.env.items():
        monkeypatch.setenv(name, value)
    return platform
