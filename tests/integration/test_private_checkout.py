"""The suite passes from a checkout other users cannot enter (a 0700 or 0750 home, as on current Ubuntu
and macOS). The tests that run code as another user are run again from a copy of the checkout inside a
0700 folder: they must copy what that user needs, never read it from the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("agent_bundle", "tests", "tools", "pyproject.toml")
AS_ANOTHER_USER = (
    "tests/integration/agent/test_agent_serve.py::test_peer_with_another_uid_is_refused",
    "tests/integration/agent/test_agent_local_trust.py",
)


def test_tests_that_run_code_as_another_user_pass_from_a_private_checkout() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run code as another user")
    outer = tempfile.mkdtemp(prefix=f"wr-private-{os.getpid()}-")  # 0700: nobody cannot enter
    try:
        copy = Path(outer) / "checkout"
        copy.mkdir()
        for name in COPIED:
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
            else:
                shutil.copy2(src, copy / name)
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *AS_ANOTHER_USER],
                           cwd=copy, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
        assert "skipped" not in r.stdout.splitlines()[-1], r.stdout[-2000:]
    finally:
        shutil.rmtree(outer, ignore_errors=True)
