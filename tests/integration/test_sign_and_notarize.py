"""build/sign_and_notarize.sh with fake Apple tools: signing order, where entitlements go, and notarytool's
JSON status. codesign, xcrun, ditto, spctl and a `uname` that says Darwin are fakes (they exist only on
macOS) recording their arguments; bash, find, sort, od and Python are real (docs/packaging.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "build" / "sign_and_notarize.sh"

FAKE = """#!/bin/sh
printf '%s\\n' "$(basename "$0") $*" >> "$FAKE_RECORD"
case "$(basename "$0") $1 $2" in
  "uname -s"*) echo Darwin ;;
  "ditto "*) for last; do :; done; : > "$last" ;;
  "xcrun notarytool submit") printf '%s' "$FAKE_NOTARY_JSON"; exit "${FAKE_NOTARY_EXIT:-0}" ;;
  "xcrun notarytool log") echo '{"issues": [{"message": "The binary is not signed."}]}' ;;
esac
exit 0
"""
MACHO_EXE = bytes.fromhex("cffaedfe") + b"\x0c\x00\x00\x01" + b"\0" * 56
MACHO_LIB = bytes.fromhex("cafebabe") + b"\0" * 60


def _app(tmp_path: Path) -> Path:
    app = tmp_path / "dist" / "Workroom.app"
    files = {
        "Contents/MacOS/workroom-app": MACHO_EXE,
        "Contents/Frameworks/QtCore.framework/Versions/A/QtCore": MACHO_LIB,
        "Contents/Frameworks/QtCore.framework/Versions/A/Resources/Info.plist": b"<plist/>",
        "Contents/Frameworks/libpython3.11.dylib": MACHO_LIB,
        "Contents/Frameworks/PySide6/QtGui.abi3.so": MACHO_LIB,
        "Contents/Resources/wr-agent.pyz": b"PK\x03\x04 not mach-o",
        "Contents/Info.plist": b"<plist/>",
    }
    for rel, data in files.items():
        path = app / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (app / "Contents/MacOS/workroom-app").chmod(0o755)
    return app


def _run(tmp_path: Path, app: Path, status: str | None, **extra: str) -> tuple[subprocess.CompletedProcess[str],
                                                                             list[str]]:
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir(exist_ok=True)
    for name in ("uname", "codesign", "xcrun", "ditto", "spctl"):
        (fakebin / name).write_text(FAKE)
        (fakebin / name).chmod(0o755)
    record = tmp_path / "calls.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("APPLE_ID", "TEAM_ID", "APP_PASSWORD")}
    env.update(PATH=f"{fakebin}:/usr/bin:/bin", FAKE_RECORD=str(record), PYTHON=sys.executable,
               WORKROOM_SIGN_IDENTITY="Developer ID Application: Test (TEAM123456)",
               WORKROOM_NOTARY_PROFILE="wr-test")
    if status is not None:
        env["FAKE_NOTARY_JSON"] = json.dumps({"id": "a1b2c3", "status": status, "message": "done"})
    env.update(extra)
    out = subprocess.run(["bash", str(SCRIPT), str(app)], env=env, capture_output=True, text=True, timeout=60)
    calls = record.read_text().splitlines() if record.exists() else []
    return out, [c for c in calls if not c.startswith("uname")]


def test_signs_inside_out_with_entitlements_only_on_the_executable(tmp_path: Path) -> None:
    app = _app(tmp_path)
    out, calls = _run(tmp_path, app, "Accepted")
    assert out.returncode == 0, out.stdout + out.stderr
    signs = [c for c in calls if c.startswith("codesign --force")]
    signed = [c.rsplit(" ", 1)[1] for c in signs]
    fw = str(app / "Contents/Frameworks/QtCore.framework")
    inner = fw + "/Versions/A/QtCore"
    assert signed.index(inner) < signed.index(fw) < signed.index(str(app)) == len(signed) - 1
    assert str(app / "Contents/Frameworks/libpython3.11.dylib") in signed
    assert str(app / "Contents/Frameworks/PySide6/QtGui.abi3.so") in signed
    assert not any(s.endswith(("wr-agent.pyz", "Info.plist")) for s in signed)
    with_entitlements = [c.rsplit(" ", 1)[1] for c in signs if "--entitlements" in c]
    assert with_entitlements == [str(app)]  # the bundle's signature covers its one executable
    assert all("--options runtime" in c and " --timestamp " in c for c in signs)
    assert f"codesign --verify --strict --deep --verbose=2 {app}" in calls
    submit = next(c for c in calls if c.startswith("xcrun notarytool submit"))
    assert "--wait" in submit and "--output-format json" in submit and "--keychain-profile wr-test" in submit
    assert calls[-3:] == [f"xcrun stapler staple {app}", f"xcrun stapler validate {app}",
                          f"spctl --assess --type execute --verbose=2 {app}"]
    assert "submission a1b2c3 Accepted" in out.stdout


def test_an_ad_hoc_identity_signs_without_a_timestamp_and_never_notarises(tmp_path: Path) -> None:
    """`-` is the Mac CI's ad-hoc signature (tests/mac/test_frozen_app.py verifies it with the real codesign)."""
    app = _app(tmp_path)
    out, calls = _run(tmp_path, app, "Accepted", WORKROOM_SIGN_IDENTITY="-")
    assert out.returncode == 0, out.stdout + out.stderr
    signs = [c for c in calls if c.startswith("codesign --force")]
    assert signs and signs[-1].endswith(str(app))
    assert all(c.startswith("codesign --force --timestamp=none --options runtime --sign - ") for c in signs), signs
    assert f"codesign --verify --strict --deep --verbose=2 {app}" in calls
    assert not any(c.startswith(("xcrun", "ditto", "spctl")) for c in calls), calls
    assert "signed ad hoc and verified; not notarising" in out.stdout


@pytest.mark.parametrize("status", ["Invalid", "Rejected", "In Progress"])
def test_any_status_but_accepted_stops_and_prints_the_log(tmp_path: Path, status: str) -> None:
    app = _app(tmp_path)
    out, calls = _run(tmp_path, app, status, FAKE_NOTARY_EXIT="1" if status == "Invalid" else "0")
    assert out.returncode == 1
    assert f"status {status.split()[0]}" in out.stdout
    assert "xcrun notarytool log a1b2c3 --keychain-profile wr-test" in calls
    assert "The binary is not signed." in out.stdout
    assert not any("stapler" in c or c.startswith("spctl") for c in calls)


def test_unreadable_notary_output_stops(tmp_path: Path) -> None:
    app = _app(tmp_path)
    out, calls = _run(tmp_path, app, None, FAKE_NOTARY_JSON="Error: HTTP status code: 401", FAKE_NOTARY_EXIT="69")
    assert out.returncode == 1 and "status unreadable" in out.stdout and "HTTP status code: 401" in out.stdout
    assert not any("notarytool log" in c or "stapler" in c for c in calls)


def test_target_arch_defaults_to_universal2_only_for_a_universal_python() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_app", ROOT / "build" / "build_app.py")
    assert spec and spec.loader
    build_app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_app)
    assert build_app.default_target_arch({"arm64", "x86_64"}) == "universal2"
    assert build_app.default_target_arch({"arm64"}) is None
    assert build_app.default_target_arch(set()) is None


def test_the_packaging_script_says_what_is_wrong(tmp_path: Path) -> None:
    """build/package_mac.sh (zip + dmg, run for real by the mac tier): bad input gets a plain answer."""
    script = str(ROOT / "build" / "package_mac.sh")
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()
    (fakebin / "uname").write_text(FAKE)
    (fakebin / "uname").chmod(0o755)
    darwin = dict(os.environ, PATH=f"{fakebin}:/usr/bin:/bin", FAKE_RECORD=str(tmp_path / "calls.txt"))

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", script, *args], env=env, capture_output=True, text=True, timeout=30)

    out = run("Workroom.app")
    assert out.returncode == 2 and "usage:" in out.stdout
    if sys.platform != "darwin":
        out = run(str(_app(tmp_path)), str(tmp_path / "out"), "Workroom-1-arm64")
        assert out.returncode == 1 and "not macOS" in out.stdout
    out = run(str(tmp_path / "nowhere.app"), str(tmp_path / "out"), "Workroom-1-arm64", env=darwin)
    assert out.returncode == 1 and "no app bundle at" in out.stdout
    out = run(str(_app(tmp_path)), str(tmp_path / "out"), "../Workroom", env=darwin)
    assert out.returncode == 2 and "NAME must be a plain file name" in out.stdout
    assert not (tmp_path / "out").exists()
