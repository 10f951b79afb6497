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
