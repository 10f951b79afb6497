"""`workroom-app` entry point: --version, and the no-display fallback to the CLI's live view."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from workroom import __version__
from workroom.ui.main import has_display

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]


def _env(**changes: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "app"), str(ROOT / "agent_bundle")])
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def test_version() -> None:
    out = subprocess.run([sys.executable, "-m", "workroom.ui.main", "--version"], capture_output=True, text=True,
                         env=_env(), timeout=30)
    assert out.returncode == 0
    assert out.stdout.strip() == f"workroom-app {__version__}"


def test_has_display_rules() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the rule is Linux-only")
    assert not has_display({})
    assert has_display({"DISPLAY": ":0"})
    assert has_display({"WAYLAND_DISPLAY": "wayland-0"})
    assert has_display({"QT_QPA_PLATFORM": "offscreen"})


def test_no_display_says_so_and_falls_back_to_the_cli(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the fallback is Linux-only")
    env = _env(DISPLAY=None, WAYLAND_DISPLAY=None, QT_QPA_PLATFORM=None, WORKROOM_HOME=str(tmp_path / "home"))
    proc = subprocess.Popen([sys.executable, "-m", "workroom.ui.main"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        _out, err = proc.communicate(timeout=4)
    except subprocess.TimeoutExpired:  # the live view runs until stopped: that is the fallback working
        proc.kill()
        _out, err = proc.communicate(timeout=10)
    finally:
        from gui_helpers import kill_agents_under

        kill_agents_under(tmp_path / "home")
    assert "no display found" in err
    assert "live status view" in err
