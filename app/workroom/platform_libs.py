"""Which system libraries Qt's X11 (xcb) platform plugin cannot find, named as Debian packages.

A missing one makes Qt abort the whole process while it starts ("could not load the Qt platform plugin
xcb"), before any of our code can say why. So `--self-test` asks the dynamic loader first (`ldd` on the
plugin) and names what to install, e.g. `libxcb-icccm4` for `libxcb-icccm.so.4`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)
_SONAME = re.compile(r"^(?P<stem>lib[\w.+-]+?)\.so\.(?P<major>\d+)")


def xcb_plugin() -> Path | None:
    """PySide6's xcb platform plugin, or None where there is none (macOS, Windows, a stripped build)."""
    try:
        import PySide6
    except ImportError:
        return None
    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.is_file() else None


def missing_from_ldd(output: str) -> list[str]:
    """Sonames `ldd` reports as "not found", each once, in order."""
    seen: list[str] = []
    for name in _NOT_FOUND.findall(output):
        if name not in seen:
            seen.append(name)
    return seen


def debian_package(soname: str) -> str:
    """Debian's package name for a shared library: the stem plus the major version, with a dash between
    when the stem ends in a digit (libxcb-icccm.so.4 -> libxcb-icccm4, libxkbcommon-x11.so.0 ->
    libxkbcommon-x11-0)."""
    match = _SONAME.match(soname)
    if match is None:
        return soname
    stem, major = match.group("stem"), match.group("major")
    return f"{stem}-{major}" if stem[-1].isdigit() else f"{stem}{major}"


def missing_xcb_libraries(plugin: Path | None = None) -> list[str] | None:
    """The sonames the xcb plugin cannot load; None when that cannot be told (no plugin, no ldd, not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    plugin = plugin or xcb_plugin()
    ldd = shutil.which("ldd")
    if plugin is None or ldd is None:
        return None
    try:
        done = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return missing_from_ldd(done.stdout)


_LOCAL_DISPLAY = re.compile(r"^(?:unix)?:(?P<number>\d+)(?:\.\d+)?$")


def unreachable_x_display(display: str, socket_dir: Path = Path("/tmp/.X11-unix")) -> str | None:
    """Why a local X display cannot be reached (Qt aborts on one), or None (reachable, remote or unset)."""
    match = _LOCAL_DISPLAY.match(display.strip())
    if match is None or not sys.platform.startswith("linux"):
        return None
    if (socket_dir / f"X{match.group('number')}").exists():
        return None
    return f"DISPLAY is {display} but no X server listens there; start one or unset DISPLAY"
