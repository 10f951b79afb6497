"""Packaging end to end: the self-test on this machine, the signing script's no-op, and (slow) the real
PyInstaller one-folder build answering `--version` and `--self-test`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import workroom
from fixtures import frozen
from workroom import self_test
from workroom.agent_bundle import locate_agent_bundle

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_self_test_passes_here_with_a_usable_keyring(memory_keyring: object, tmp_path: Path) -> None:
    results = self_test.run_self_test(cache_dir=tmp_path)
    assert [r.name for r in results] == ["platform libraries", "qt", "keyring", "agent bundle", "icons",
                                        "notifications"]
    assert all(r.ok for r in results), [r.line() for r in results if not r.ok]
    agent = next(r for r in results if r.name == "agent bundle")
    path = Path(agent.detail.split(" (")[0])
    assert path.parent == tmp_path
    assert f"sha256 {hashlib.sha256(path.read_bytes()).hexdigest()})" in agent.detail


def test_self_test_says_exactly_why_the_keyring_is_unusable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import keyring
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        code = self_test.main_self_test(cache_dir=tmp_path)
    finally:
        keyring.set_keyring(previous)
    out = capsys.readouterr().out
    assert code == 1
    assert "[FAIL] keyring: no usable keyring: the fail backend (keyring.backends.fail.Keyring)" in out
    assert "rejected:" in out
    assert out.rstrip().endswith("self-test FAILED: keyring")
    assert "[ok] agent bundle" in out and "[ok] icons" in out and "[ok] qt" in out


def test_a_crashing_check_is_a_failure_not_a_crash(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def boom() -> self_test.CheckResult:
        raise RuntimeError("kaput")

    monkeypatch.setattr(self_test, "check_icons", boom)
    results = self_test.run_self_test(cache_dir=tmp_path)
    icons = next(r for r in results if r.name == "icons")
    assert not icons.ok and "RuntimeError: kaput" in icons.detail


def test_early_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert self_test.early_flags(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"workroom-app {workroom.__version__}"
    assert self_test.early_flags([]) is None
    assert self_test.early_flags(["--something-else"]) is None


def test_workroom_app_answers_version_and_self_test_from_source(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKROOM_", "PYTHON_KEYRING"))}
    env.update(WORKROOM_HOME=str(tmp_path), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    cmd = [sys.executable, "-m", "workroom.ui.main"]
    out = subprocess.run([*cmd, "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, f"workroom-app {workroom.__version__}"), out.stderr
    out = subprocess.run([*cmd, "--self-test"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "(source)" in out.stdout, out.stdout + out.stderr
    assert out.stdout.rstrip().endswith("self-test FAILED: keyring")


def test_signing_script_does_nothing_without_its_variables() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"WORKROOM_SIGN_IDENTITY", "WORKROOM_NOTARY_PROFILE", "APPLE_ID", "TEAM_ID", "APP_PASSWORD"}
    }
    out = subprocess.run(
        ["bash", str(ROOT / "build" / "sign_and_notarize.sh"), "/nonexistent/Workroom.app"],
        env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    expected = "not macOS" if sys.platform != "darwin" else "WORKROOM_SIGN_IDENTITY is not set"
    assert expected in out.stdout


# --- the real build (slow) ---------------------------------------------------------------------------


def _ensure_pyinstaller() -> None:
    """PyInstaller is a build tool, not a runtime dependency: install it into this venv when missing."""
    if importlib.util.find_spec("PyInstaller") is not None:
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "pyinstaller>=6.3"], check=True, timeout=600)


@pytest.fixture(scope="module")
def built_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if sys.platform == "darwin":
        pytest.skip("the one-folder Linux build is tested here; on macOS run build/build_app.py for Workroom.app")
    _ensure_pyinstaller()
    out = tmp_path_factory.mktemp("pyinstaller")
    started = time.monotonic()
    builder = ROOT / "build" / "build_app.py"
    proc = subprocess.run(
        [sys.executable, str(builder), "--dist", str(out / "dist"), "--work", str(out / "work")],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    app_dir = out / "dist" / "workroom-app"
    size = sum(p.stat().st_size for p in app_dir.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"\n[packaging] one-folder build: {elapsed:.1f} s, {size / 1e6:.1f} MB at {app_dir}")
    yield app_dir


def _frozen_env(tmp_path: Path, usable_keyring: bool) -> dict[str, str]:
    return frozen.frozen_env(tmp_path, usable_keyring)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_built_app_answers_version(built_app: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [str(built_app / "workroom-app"), "--version"],
        env=_frozen_env(tmp_path, True), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"workroom-app {workroom.__version__}"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_built_app_self_test_passes(built_app: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [str(built_app / "workroom-app"), "--self-test"],
        env=_frozen_env(tmp_path, True), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "(frozen)" in out.stdout and "self-test passed" in out.stdout
    # The packaged agent is the same bundle development builds from these sources: one hash everywhere.
    packaged = next(built_app.rglob("wr-agent.pyz"))
    dev = locate_agent_bundle(tmp_path / "cache")
    assert packaged.read_bytes() == dev.data
    assert f"sha256 {dev.sha256}" in out.stdout


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_built_app_self_test_names_what_failed(built_app: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [str(built_app / "workroom-app"), "--self-test"],
        env=_frozen_env(tmp_path, False), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "[FAIL] keyring: no usable keyring" in out.stdout
    assert out.stdout.rstrip().endswith("self-test FAILED: keyring")


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_built_app_runs_its_local_agent_with_its_own_interpreter(built_app: Path, tmp_path: Path) -> None:
    """No python3 anywhere on PATH (as on a Mac without Command Line Tools): the frozen app is the agent's
    Python. The app runs offscreen until this computer is live, then quits on SIGTERM. The same body runs on
    a Mac against Workroom.app (tests/mac/test_frozen_app.py)."""
    frozen.check_app_is_live_with_its_own_python(built_app / "workroom-app", tmp_path)
