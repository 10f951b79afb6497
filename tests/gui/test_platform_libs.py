"""`--self-test` names a system library Qt's X11 plugin cannot load (instead of Qt aborting the app), as the
Debian package to install; `./dev` installs those packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from workroom.platform_libs import debian_package, missing_from_ldd, missing_xcb_libraries, xcb_plugin

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]

LDD_OUTPUT = """\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
"""


def test_ldd_output_and_package_names() -> None:
    assert missing_from_ldd(LDD_OUTPUT) == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert [debian_package(s) for s in ("libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-render-util.so.0",
                                        "libxkbcommon-x11.so.0", "libxcb-cursor.so.0", "libEGL.so.1")] == [
        "libxcb-icccm4", "libxcb-keysyms1", "libxcb-render-util0", "libxkbcommon-x11-0", "libxcb-cursor0", "libEGL1"]


def test_dev_installs_every_package_the_xcb_plugin_needs() -> None:
    wanted = (ROOT / "dev").read_text()
    for package in ("libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0", "libxcb-render-util0", "libxcb-xinerama0",
                    "libxcb-randr0", "libxcb-shape0", "libxcb-xkb1", "libxcb-cursor0", "libxkbcommon-x11-0"):
        assert package in wanted, package


@pytest.fixture
def xvfb() -> Any:
    """A real X server (Xvfb) on a display number of our own; stopped by PID."""
    exe = shutil.which("Xvfb")
    if exe is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb)")
    number = 200 + os.getpid() % 500
    proc = subprocess.Popen([exe, f":{number}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while not Path(f"/tmp/.X11-unix/X{number}").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "Xvfb did not start"
        time.sleep(0.05)
    yield f":{number}"
    proc.terminate()
    proc.wait(10)


def self_test(display: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DISPLAY": display, "WORKROOM_HOME": str(home)}
    env.pop("QT_QPA_PLATFORM", None)
    return subprocess.run([sys.executable, "-m", "workroom.ui.main", "--self-test"], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def platform_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [x for x in done.stdout.splitlines() if "platform libraries" in x]
    assert lines, f"no platform line (Qt aborted?): {done.stdout} {done.stderr}"
    return lines[0]


@pytest.mark.skipif(not sys.platform.startswith("linux") or xcb_plugin() is None, reason="Linux with PySide6's xcb")
def test_self_test_on_a_real_display_names_what_is_missing_or_passes(xvfb: str, tmp_path: Path) -> None:
    """The real self-test on a real X server with this machine's real libraries: if the loader misses any,
    it fails naming each package (and Qt does not abort it); if none, the check passes."""
    missing = missing_xcb_libraries()
    assert missing is not None
    done = self_test(xvfb, tmp_path)
    line = platform_line(done)
    if missing:
        assert done.returncode == 1 and line.startswith("[FAIL]"), done.stdout + done.stderr
        for soname in missing:
            assert debian_package(soname) in line
    else:
        assert line.startswith("[ok]"), line
        assert "[ok] qt: PySide6" in done.stdout and "platform xcb" in done.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 displays")
def test_self_test_names_a_display_nobody_serves_instead_of_aborting(tmp_path: Path) -> None:
    number = 700 + os.getpid() % 200
    assert not Path(f"/tmp/.X11-unix/X{number}").exists()
    done = self_test(f":{number}", tmp_path)
    line = platform_line(done)
    assert line.startswith("[FAIL]") and f":{number}" in line
    assert "self-test FAILED" in done.stdout  # it got to the end: Qt did not abort it
