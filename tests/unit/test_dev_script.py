"""`./dev app` installs what the app needs and nothing the tests alone need (a database, a cache, Node, strace, a
desktop for screenshots); `./dev test` installs both (`./dev packages app|test` prints the lists the two use)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DEV = Path(__file__).resolve().parents[2] / "dev"


def packages(which: str) -> list[str]:
    out = subprocess.run(["bash", str(DEV), "packages", which], capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.split()


def test_the_app_gets_only_what_it_needs_and_the_tests_get_everything() -> None:
    app, test = packages("app"), packages("test")
    assert {"openssh-client", "python3-venv", "libegl1", "libxcb-cursor0"} <= set(app)
    assert not {"postgresql", "redis-server", "nodejs", "strace", "xvfb", "openssh-server", "ansible-core"} & set(app)
    assert set(app) < set(test) and {"postgresql", "redis-server", "nodejs", "strace"} <= set(test)


def _python_env_installs(kind: str, tmp_path: Path) -> list[str]:
    """The pip commands `python_env KIND` runs (the function taken from the script, its venv a recorder)."""
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    record = tmp_path / "pip-args"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$*" >> {record}\n')
    python.chmod(0o755)
    for name in ("pyproject.toml", "tools/simbox/pyproject.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    function = subprocess.run(["sed", "-n", "/^python_env() {/,/^}/p", str(DEV)], capture_output=True, text=True,
                              check=True).stdout
    assert function.startswith("python_env()"), function
    subprocess.run(["bash", "-c", f'log() {{ :; }}\nvenv={venv}\n{function}\npython_env {kind}'], cwd=tmp_path,
                   check=True, timeout=30)
    return [line for line in record.read_text().splitlines() if "install" in line and "pip" not in line.split()[-1]]


def test_the_app_gets_the_package_without_the_test_tools_and_the_tests_get_them(tmp_path: Path) -> None:
    app = _python_env_installs("app", tmp_path / "app")
    assert any(line.endswith("-e .") for line in app) and not any("[dev]" in line or "simbox" in line for line in app)
    test = _python_env_installs("test", tmp_path / "test")
    assert any("-e .[dev]" in line for line in test) and any("tools/simbox" in line for line in test)
