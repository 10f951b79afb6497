"""Workroom.app as built by build/workroom.spec, on a Mac: this computer's agent runs with the app's own binary
when no python3 is on PATH, the app started with no one at the screen reaches "this computer: live", an ad-hoc
signature passes `codesign --verify --deep --strict`, and the zip and .dmg for download hold the app.

All marked mac. The Mac CI builds the app once and names it in WORKROOM_TEST_APP, so these check the very
bundle it uploads; without the variable the fixture builds one (a few minutes). The app-as-Python body is
the one the Linux one-folder build runs (tests/integration/test_packaging.py, fixtures/frozen.py).
"""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import workroom
from fixtures import frozen

pytestmark = [pytest.mark.mac, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1500)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    given = os.environ.get("WORKROOM_TEST_APP")
    if given:
        path = Path(given)
        assert (path / "Contents" / "Info.plist").is_file(), f"WORKROOM_TEST_APP={given} is not an app bundle"
        yield path
        return
    out = tmp_path_factory.mktemp("app")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "build" / "build_app.py"), "--dist", str(out / "dist"),
                           "--work", str(out / "work")], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    print(f"\n[mac] Workroom.app built in {time.monotonic() - started:.0f} s")
    yield out / "dist" / "Workroom.app"


def _executable(app: Path) -> Path:
    info = plistlib.loads((app / "Contents" / "Info.plist").read_bytes())
    return app / "Contents" / "MacOS" / info["CFBundleExecutable"]


def _gui_domain() -> bool:
    return subprocess.run(["launchctl", "print", f"gui/{os.getuid()}"], capture_output=True,
                          timeout=30).returncode == 0


def test_the_app_answers_its_version_and_self_test(app: Path, tmp_path: Path) -> None:
    env = frozen.frozen_env(tmp_path, True)
    out = subprocess.run([str(_executable(app)), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, f"workroom-app {workroom.__version__}"), out.stderr
    out = subprocess.run([str(_executable(app)), "--self-test"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "(frozen)" in out.stdout, out.stdout + out.stderr


def test_the_app_is_this_computers_agent_python_and_reaches_live(app: Path, tmp_path: Path) -> None:
    """No python3 on PATH, the app binary started as Finder would start it: Qt's Cocoa platform where this user
    has a GUI session (GitHub's runners do), offscreen where not. Its agent runs with the app's binary."""
    frozen.check_app_is_live_with_its_own_python(_executable(app), tmp_path,
                                                 qt_platform=None if _gui_domain() else "offscreen")


def test_the_app_as_python_keeps_stdin_and_stdout(app: Path, tmp_path: Path) -> None:
    """The installer's probe scripts go in on stdin and answer on stdout; the agent's stdlib modules are there."""
    env = frozen.frozen_env(tmp_path, True)
    env.update(WORKROOM_AS_PYTHON="1", PATH=frozen.path_without_python(tmp_path / "bin"))
    script = "import ctypes, fcntl, hashlib, json, socket, ssl, sys; print(json.dumps(sys.argv[1:]))"
    out = subprocess.run([str(_executable(app)), "-", "a b", "c"], input=script, env=env, capture_output=True,
                         text=True, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, '["a b", "c"]'), out.stderr


def test_an_ad_hoc_signature_verifies_deep_and_strict(app: Path, tmp_path: Path) -> None:
    """build/sign_and_notarize.sh signs a copy inside out with identity "-" (ad hoc: no Developer ID on CI),
    then the real codesign checks every nested piece of code. A Developer ID signature and notarisation are the
    release job's, with the project's secrets."""
    copy = tmp_path / "Workroom.app"
    subprocess.run(["ditto", str(app), str(copy)], check=True, timeout=300)
    env = dict(os.environ, WORKROOM_SIGN_IDENTITY="-", PYTHON=sys.executable)
    for var in ("WORKROOM_NOTARY_PROFILE", "APPLE_ID", "TEAM_ID", "APP_PASSWORD"):
        env.pop(var, None)
    signed = subprocess.run(["bash", str(ROOT / "build" / "sign_and_notarize.sh"), str(copy)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert signed.returncode == 0, signed.stdout[-3000:] + signed.stderr[-3000:]
    assert "signed ad hoc and verified" in signed.stdout
    verify = subprocess.run(["codesign", "--verify", "--deep", "--strict", "--verbose=2", str(copy)],
                            capture_output=True, text=True, timeout=300)
    assert verify.returncode == 0, verify.stderr
    details = subprocess.run(["codesign", "-d", "--verbose=2", str(copy)], capture_output=True, text=True,
                             timeout=60)
    assert "adhoc" in details.stderr and "runtime" in details.stderr, details.stderr
    entitlements = subprocess.run(["codesign", "-d", "--entitlements", "-", "--xml", str(copy)],
                                  capture_output=True, timeout=60)
    assert b"com.apple.security.cs.allow-unsigned-executable-memory" in entitlements.stdout, entitlements.stderr


def test_the_zip_and_the_dmg_hold_the_app(app: Path, tmp_path: Path) -> None:
    out = subprocess.run(["bash", str(ROOT / "build" / "package_mac.sh"), str(app), str(tmp_path / "out"),
                          "Workroom-test"], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    info = (app / "Contents" / "Info.plist").read_bytes()
    unzipped = tmp_path / "unzipped"
    subprocess.run(["ditto", "-x", "-k", str(tmp_path / "out" / "Workroom-test.zip"), str(unzipped)], check=True,
                   timeout=300)
    assert (unzipped / "Workroom.app" / "Contents" / "Info.plist").read_bytes() == info
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["hdiutil", "attach", "-nobrowse", "-readonly", "-noautoopen", "-mountpoint", str(mount),
                    str(tmp_path / "out" / "Workroom-test.dmg")], check=True, capture_output=True, timeout=300)
    try:
        assert (mount / "Workroom.app" / "Contents" / "Info.plist").read_bytes() == info
        assert os.readlink(mount / "Applications") == "/Applications"
    finally:
        subprocess.run(["hdiutil", "detach", str(mount)], capture_output=True, timeout=120)
