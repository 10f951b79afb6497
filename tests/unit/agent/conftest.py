"""Fixtures for the agent's unit tests."""

import pytest


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home of the test's own (mode 0700) as `~`, no systemd session, and on PATH only `tmp_path/bin`
    (empty: no systemctl, loginctl or launchctl unless the test puts one there)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return home
