"""Info.plist rendering: parses, says menu-bar-only, carries the package version, and refuses gaps."""

from __future__ import annotations

import importlib.util
import plistlib
import sys
from pathlib import Path
from types import ModuleType

import pytest
import workroom

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _load_render_plist() -> ModuleType:
    # build/ is not a package (and `import build` would find PyPA's build); load the file directly.
    spec = importlib.util.spec_from_file_location("render_plist", ROOT / "build" / "render_plist.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("render_plist", module)
    spec.loader.exec_module(module)
    return module


rp = _load_render_plist()


def test_rendered_plist_parses_and_is_menu_bar_only(tmp_path: Path) -> None:
    parsed = rp.render_file(tmp_path / "Info.plist")
    again = plistlib.loads((tmp_path / "Info.plist").read_bytes())
    assert parsed == again
    assert again["LSUIElement"] is True
    assert again["NSHighResolutionCapable"] is True
    assert again["LSMinimumSystemVersion"] == "13.0"
    assert again["CFBundleIdentifier"] == "dev.workroom.companion"
    assert again["CFBundleExecutable"] == "workroom-app"
    assert "$" not in (tmp_path / "Info.plist").read_text()


def test_versions_equal_the_package_version(tmp_path: Path) -> None:
    parsed = rp.render_file(tmp_path / "Info.plist")
    assert rp.package_version() == workroom.__version__
    assert parsed["CFBundleShortVersionString"] == workroom.__version__
    assert parsed["CFBundleVersion"] == workroom.__version__


def test_a_missing_variable_fails_loudly() -> None:
    values = rp.plist_values()
    del values["short_version"]
    with pytest.raises(rp.PlistTemplateError, match=r"\$\{short_version\}"):
        rp.render(rp.TEMPLATE.read_text(), values)


def test_an_unknown_placeholder_in_the_template_fails_loudly(tmp_path: Path) -> None:
    template = tmp_path / "Info.plist.in"
    template.write_text(rp.TEMPLATE.read_text().replace("${bundle_name}", "${bundle_nmae}", 1))
    with pytest.raises(rp.PlistTemplateError, match="bundle_nmae"):
        rp.render_file(tmp_path / "Info.plist", template)
    assert rp.main(["--template", str(template), "--out", str(tmp_path / "x.plist")]) == 1
    assert not (tmp_path / "x.plist").exists()


def test_a_rendering_that_is_not_a_plist_is_refused() -> None:
    with pytest.raises(rp.PlistTemplateError, match="does not parse"):
        rp.render("<plist><dict><key>A</key>${v}</dict></plist>", {"v": "<string>unclosed"})


@pytest.mark.parametrize(
    ("version", "expected"),
    [("0.1.0", ("0.1.0", "0.1.0")), ("1.2.0rc1", ("1.2.0", "1.2.0")), ("2.0.dev3", ("2.0", "2.0")), ("3", ("3", "3"))],
)
def test_apple_versions_are_numeric(version: str, expected: tuple[str, str]) -> None:
    assert rp.apple_versions(version) == expected


def test_a_version_without_a_number_is_refused() -> None:
    with pytest.raises(rp.PlistTemplateError, match="does not start with a number"):
        rp.apple_versions("dev")


def _pyside6_floors() -> set[str]:
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = set()
    for dep in deps:
        name, _, rest = dep.partition(">=")
        if name.strip().lower() in ("pyside6-essentials", "pyside6"):
            floors.add(rest.split(",")[0].split(";")[0].strip())
    return floors


def test_minimum_macos_follows_the_pyside6_floor(tmp_path: Path) -> None:
    """The PySide6 floor (the first Qt whose tray menu works on macOS 27) decides LSMinimumSystemVersion."""
    assert _pyside6_floors() == {rp.PYSIDE6_FLOOR}, "pyproject's PySide6 floor and render_plist disagree"
    major, minor = (int(p) for p in rp.PYSIDE6_FLOOR.split(".")[:2])
    parsed = rp.render_file(tmp_path / "Info.plist")
    assert parsed["LSMinimumSystemVersion"] == rp.QT_MINIMUM_MACOS[(major, minor)] == "13.0"
    assert tuple(int(p) for p in rp.PYSIDE6_FLOOR.split(".")) >= (6, 11, 3)


def test_local_network_usage_is_explained(tmp_path: Path) -> None:
    parsed = rp.render_file(tmp_path / "Info.plist")
    text = parsed["NSLocalNetworkUsageDescription"]
    assert isinstance(text, str) and "local network" in text and "SSH" in text
