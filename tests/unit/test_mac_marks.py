"""Every test file that uses a macOS-only API for real is marked `mac`, so on Linux its real part is skipped
with "needs macOS" instead of failing, and on the Mac CI it runs in the mac tier.

"For real" is what only a Mac has: running a macOS-only tool as a command (argv or shell text starting with
it), the real Objective-C bridge (`RubiconBridge(...)`, `macos.bridge()`, a rubicon import), a PyObjC import,
or a system framework loaded by path. Merely naming one is not: a fake `launchctl` written to a folder, the selectors a
fake bridge records (`"NSWorkspace"`, `"SMAppService"` in an assertion) run anywhere. A file may mix both,
as the mac tier's files do (`pytest.param(..., marks=pytest.mark.mac)`); it then carries the mark somewhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
TESTS = Path(__file__).resolve().parents[1]

MAC_TOOLS = ("launchctl", "codesign", "hdiutil", "spctl", "xcrun", "notarytool", "stapler", "ditto", "sips",
             "iconutil", "lipo", "osascript", "pmset", "sw_vers", "plutil", "PlistBuddy", "defaults", "open")
_TOOL = r"(?:/usr/bin/|/bin/|/usr/sbin/|/usr/libexec/)?(?:" + "|".join(MAC_TOOLS) + r")"
MAC_ONLY_APIS = {
    "a macOS tool as a command's argv": re.compile(r"""\[\s*["']""" + _TOOL + r"""["']\s*[,\]]|"""
                                                   r"""\b(?:run|Popen|check_output|check_call|call)\(\s*\(\s*["']"""
                                                   + _TOOL + r"""["']"""),
    "a macOS tool at the start of a shell command": re.compile(r"""\brun\(\s*f?["']""" + _TOOL + r"""\s"""),
    "the real Objective-C bridge": re.compile(r"\bRubiconBridge\s*\(|\bmacos\.bridge\(\)|^\s*from rubicon\b", re.M),
    "PyObjC": re.compile(r"^\s*(?:from|import)\s+(?:objc|AppKit|Foundation|Cocoa|ServiceManagement|"
                         r"UserNotifications|Quartz)\b", re.M),
    "a system framework loaded by path": re.compile(r"/System/Library/Frameworks/|libobjc"),
}
MARKED_MAC = re.compile(r"\bmark\.mac\b")


def mac_only_uses(source: str) -> list[str]:
    return [what for what, pattern in MAC_ONLY_APIS.items() if pattern.search(source)]


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if p.resolve() != Path(__file__).resolve())


def test_every_file_using_a_macos_only_api_is_marked_mac() -> None:
    unmarked = {}
    for path in _test_files():
        source = path.read_text(encoding="utf-8")
        uses = mac_only_uses(source)
        if uses and not MARKED_MAC.search(source):
            unmarked[str(path.relative_to(TESTS))] = uses
    assert not unmarked, f"mark these `mac` (or their real parts): {unmarked}"


def test_the_mac_tier_files_are_the_ones_found() -> None:
    """The detector is not blind: each mac-tier file is found by what it uses."""
    found = {str(p.relative_to(TESTS)) for p in _test_files() if mac_only_uses(p.read_text(encoding="utf-8"))}
    assert {"mac/test_cocoa_seam.py", "mac/test_frozen_app.py", "integration/macos/test_launchd_agent.py"} <= found


@pytest.mark.parametrize("source", [
    'subprocess.run(["hdiutil", "attach", dmg])',
    'subprocess.run(("/usr/bin/codesign", "--verify", app))',
    'shell.run(f"launchctl bootout gui/{uid}/{label}")',
    "bridge = macos.RubiconBridge()",
    "from AppKit import NSWorkspace",
    'ctypes.CDLL("/System/Library/Frameworks/ServiceManagement.framework/ServiceManagement")',
])
def test_a_real_use_is_found(source: str) -> None:
    assert mac_only_uses(source), source


@pytest.mark.parametrize("source", [
    'fake = fakebin / "launchctl"',
    'for name in ("uname", "codesign", "xcrun"):',
    'assert not any(c.startswith(("xcrun", "ditto", "spctl")) for c in calls)',
    'assert f"codesign --verify --strict {app}" in calls',
    'assert selectors(fake) == ["sharedApplication", "SMAppService"]',
    'monkeypatch.setattr(macos, "_bridge", FakeBridge())',
])
def test_a_fake_or_a_mere_name_is_not(source: str) -> None:
    assert not mac_only_uses(source), source
