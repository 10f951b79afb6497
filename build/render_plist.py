"""Render Info.plist from Info.plist.in for Workroom.app.

Why string.Template.substitute: a placeholder nobody filled must stop the build (a KeyError turned into a
clear message), never ship as a literal "${...}" in the bundle. The version comes from the package's single
source, app/workroom/__init__.py `__version__`, read the same way hatchling reads it (a regex, no import).

    python build/render_plist.py --out build/out/Info.plist
"""

from __future__ import annotations

import argparse
import plistlib
import re
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "Info.plist.in"
VERSION_FILE = ROOT / "app" / "workroom" / "__init__.py"

BUNDLE_IDENTIFIER = "dev.workroom.companion"
BUNDLE_NAME = "Workroom"
EXECUTABLE = "workroom-app"
PYSIDE6_FLOOR = "6.11.3"
"""The lowest PySide6 the app allows (pyproject.toml); the first Qt whose tray menu works on macOS 27."""
QT_MINIMUM_MACOS = {(6, 8): "12.0", (6, 9): "12.0", (6, 10): "13.0", (6, 11): "13.0", (6, 12): "13.0"}
"""The oldest macOS each Qt minor release supports (Qt's "Supported Platforms" pages)."""
MINIMUM_MACOS = QT_MINIMUM_MACOS[(int(PYSIDE6_FLOOR.split(".")[0]), int(PYSIDE6_FLOOR.split(".")[1]))]
LOCAL_NETWORK_USAGE = (
    "Workroom connects to your workrooms over SSH, and some of them are on your local network "
    "(a VM, a box in the office). macOS asks before an app may reach devices on the local network."
)
ICON_FILE = "Workroom.icns"

_VERSION_RE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)
_RELEASE_RE = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?")


class PlistTemplateError(ValueError):
    """The template asks for a value nobody gave, or the result is not a valid plist."""


def package_version(path: Path = VERSION_FILE) -> str:
    match = _VERSION_RE.search(path.read_text(encoding="utf-8"))
    if not match:
        raise PlistTemplateError(f"no __version__ = '...' line in {path}")
    return match.group(1)


def apple_versions(version: str) -> tuple[str, str]:
    """(CFBundleShortVersionString, CFBundleVersion): Apple wants up to three integers, so "1.2.0rc1" -> "1.2.0".

    A plain release version ("0.1.0") is used unchanged for both.
    """
    match = _RELEASE_RE.match(version)
    if not match:
        raise PlistTemplateError(f"version {version!r} does not start with a number")
    release = ".".join(part for part in match.groups() if part is not None)
    return release, release


def plist_values(version: str | None = None, **overrides: str) -> dict[str, str]:
    version = package_version() if version is None else version
    short, build = apple_versions(version)
    values = {
        "bundle_name": BUNDLE_NAME,
        "bundle_identifier": BUNDLE_IDENTIFIER,
        "executable": EXECUTABLE,
        "short_version": short,
        "build_version": build,
        "icon_file": ICON_FILE,
        "minimum_macos": MINIMUM_MACOS,
        "local_network_usage": LOCAL_NETWORK_USAGE,
        "copyright": "Workroom companion contributors, MIT licence",
    }
    values.update(overrides)
    return values


def render(template_text: str, values: dict[str, str]) -> str:
    """Substitute every ${name}; a missing one raises PlistTemplateError naming it."""
    try:
        text = string.Template(template_text).substitute(values)
    except KeyError as exc:
        raise PlistTemplateError(f"Info.plist.in needs ${{{exc.args[0]}}}, which was not given") from None
    except ValueError as exc:  # a lone "$" or a malformed placeholder
        raise PlistTemplateError(f"Info.plist.in has a malformed placeholder: {exc}") from None
    try:
        plistlib.loads(text.encode("utf-8"))
    except Exception as exc:
        raise PlistTemplateError(f"rendered Info.plist does not parse: {exc}") from None
    return text


def render_file(out: Path, template: Path = TEMPLATE, version: str | None = None) -> dict[str, object]:
    """Write the rendered plist to `out` and return it parsed (for PyInstaller's BUNDLE(info_plist=...))."""
    text = render(template.read_text(encoding="utf-8"), plist_values(version))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    parsed: dict[str, object] = plistlib.loads(text.encode("utf-8"))
    return parsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render Info.plist from Info.plist.in.")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "out" / "Info.plist")
    parser.add_argument("--template", type=Path, default=TEMPLATE)
    args = parser.parse_args(argv)
    try:
        render_file(args.out, args.template)
    except PlistTemplateError as exc:
        print(f"render_plist: {exc}", file=sys.stderr)
        return 1
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
