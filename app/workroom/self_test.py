"""`workroom-app --self-test`: can this install (or frozen app) do its job? Each check says why not.

Checks: Qt loads (offscreen is fine when there is no display), a keyring backend is usable (or which
backends were rejected and why), the agent bundle is present and its sha256 is the hash of its bytes,
every icon is present and readable, and the notification library with this platform's backend loads.
Exit 0 when all pass, 1 naming what failed.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workroom import __version__

KEYRING_PROBE_SERVICE = "workroom-companion-self-test"


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"[{'ok' if self.ok else 'FAIL'}] {self.name}: {self.detail}"


def _no_display() -> bool:
    return sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def check_qt() -> CheckResult:
    """Import PySide6, make (or reuse) a QGuiApplication, paint one pixel."""
    try:
        if _no_display():
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6 import __version__ as pyside_version
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter

        app = QGuiApplication.instance() or QGuiApplication([sys.argv[0] if sys.argv else "workroom-app"])
        image = QImage(4, 4, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.fillRect(0, 0, 4, 4, QColor(0, 0, 0))
        painter.end()
        if image.pixelColor(1, 1).alpha() != 255:
            return CheckResult("qt", False, "Qt loaded but could not paint an image")
        platform = QGuiApplication.platformName() if isinstance(app, QGuiApplication) else "?"
    except Exception as exc:  # any import or plugin failure is the answer
        return CheckResult("qt", False, f"Qt did not load: {type(exc).__name__}: {exc}")
    return CheckResult("qt", True, f"PySide6 {pyside_version}, platform {platform}")


def _rejected_backends() -> list[str]:
    """Every keyring backend class that is not viable here, with the reason it gives."""
    import keyring.backend as kb

    kb.get_all_keyring()  # loads the plugins so that every backend class is known
    reasons: list[str] = []
    for cls in sorted(getattr(kb.KeyringBackend, "_classes", ()), key=lambda c: f"{c.__module__}.{c.__name__}"):
        name = f"{cls.__module__}.{cls.__name__}"
        if name in ("keyring.backends.fail.Keyring", "keyring.backends.chainer.ChainerBackend"):
            continue
        try:
            cls.priority  # noqa: B018  (evaluating it is the viability check)
        except Exception as exc:
            reasons.append(f"{name}: {exc}")
    return reasons


def check_keyring() -> CheckResult:
    """A backend that answers a lookup; otherwise the backend chosen and why each other one was rejected."""
    try:
        import keyring
        from keyring.backends import chainer, fail
    except Exception as exc:
        return CheckResult("keyring", False, f"the keyring package did not load: {type(exc).__name__}: {exc}")
    backend = keyring.get_keyring()
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    unusable = isinstance(backend, fail.Keyring) or (
        isinstance(backend, chainer.ChainerBackend) and not backend.backends
    )
    if unusable:
        why = "; ".join(_rejected_backends()) or "no backend classes are installed"
        kind = "the fail backend" if isinstance(backend, fail.Keyring) else "a chainer with no backends"
        return CheckResult("keyring", False, f"no usable keyring: {kind} ({name}) was chosen; rejected: {why}")
    try:
        backend.get_password(KEYRING_PROBE_SERVICE, "probe")
    except Exception as exc:
        return CheckResult("keyring", False, f"{name} is chosen but a lookup failed: {type(exc).__name__}: {exc}")
    if isinstance(backend, chainer.ChainerBackend):
        inner = ", ".join(f"{type(b).__module__}.{type(b).__name__}" for b in backend.backends)
        return CheckResult("keyring", True, f"{name} over {inner}")
    return CheckResult("keyring", True, name)


def check_agent_bundle(cache_dir: Path | None = None) -> CheckResult:
    """The bundle exists and the hash the app would push is the hash of the bytes on disk."""
    from workroom.agent_bundle import AgentBundleError, locate_agent_bundle
    from workroom.regular_file import read_regular_file

    try:
        bundle = locate_agent_bundle(cache_dir)
    except AgentBundleError as exc:
        return CheckResult("agent bundle", False, str(exc))
    assert bundle.path is not None  # a located bundle always names its file
    try:
        on_disk = hashlib.sha256(read_regular_file(bundle.path, None)).hexdigest()
    except OSError as exc:
        return CheckResult("agent bundle", False, f"{bundle.path} could not be read again: {exc}")
    if on_disk != bundle.sha256:
        return CheckResult(
            "agent bundle", False, f"{bundle.path}: sha256 on disk {on_disk} != reported {bundle.sha256}"
        )
    return CheckResult("agent bundle", True, f"{bundle.path} ({len(bundle.data)} bytes, sha256 {bundle.sha256})")


def check_icons() -> CheckResult:
    from workroom.resources import MissingResourceError, badge_kinds, icon_problems, resources_dir

    try:
        where = resources_dir()
        problems = icon_problems()
    except (MissingResourceError, ImportError) as exc:
        return CheckResult("icons", False, str(exc))
    if problems:
        return CheckResult("icons", False, "; ".join(problems))
    return CheckResult("icons", True, f"{len(badge_kinds())} badge kinds x 2 sizes + app icon in {where}")


def check_platform_libraries() -> CheckResult:
    """Linux: every library Qt's X11 plugin needs is installed (a missing one aborts Qt at start-up)."""
    from workroom.platform_libs import debian_package, missing_xcb_libraries, unreachable_x_display

    unreachable = unreachable_x_display(os.environ.get("DISPLAY", ""))
    if unreachable and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"  # Qt would abort on it; let the Qt check still run
        return CheckResult("platform libraries", False, unreachable)
    missing = missing_xcb_libraries()
    if missing is None:
        return CheckResult("platform libraries", True, "not applicable here")
    if not missing:
        return CheckResult("platform libraries", True, "everything Qt's X11 plugin needs is installed")
    packages = " ".join(dict.fromkeys(debian_package(m) for m in missing))
    what = f"Qt's X11 plugin cannot load {', '.join(missing)}; install: sudo apt-get install {packages}"
    if _no_display():
        return CheckResult("platform libraries", True, f"no display, so not needed now, but {what}")
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # so the Qt check below can still run instead of aborting
    return CheckResult("platform libraries", False, what)


def check_notifications() -> CheckResult:
    """desktop-notifier and this platform's backend import (a frozen app must have shipped them)."""
    try:
        from importlib.metadata import version

        from desktop_notifier.main import get_backend_class

        backend = get_backend_class().__name__
    except Exception as exc:  # a missing module or library is the answer
        return CheckResult("notifications", False, f"desktop-notifier did not load: {type(exc).__name__}: {exc}")
    where = ("no notification center outside an app bundle: Qt's balloon is used"
             if backend == "DummyNotificationCenter" else backend)
    return CheckResult("notifications", True, f"desktop-notifier {version('desktop-notifier')}, {where}")


def run_self_test(cache_dir: Path | None = None) -> list[CheckResult]:
    """Every check, in order; one that raises unexpectedly becomes a failed result, never a crash."""
    checks: list[tuple[str, Callable[[], CheckResult]]] = [
        ("platform libraries", check_platform_libraries),
        ("qt", check_qt),
        ("keyring", check_keyring),
        ("agent bundle", lambda: check_agent_bundle(cache_dir)),
        ("icons", check_icons),
        ("notifications", check_notifications),
    ]
    results: list[CheckResult] = []
    for name, check in checks:
        try:
            results.append(check())
        except Exception as exc:
            results.append(CheckResult(name, False, f"the check itself crashed: {type(exc).__name__}: {exc}"))
    return results


def main_self_test(cache_dir: Path | None = None) -> int:
    """Print each check; 0 when all pass, else 1 with a last line naming what failed."""
    print(f"workroom-app {__version__} self-test ({'frozen' if getattr(sys, 'frozen', False) else 'source'})")
    results = run_self_test(cache_dir)
    for result in results:
        print(result.line())
    failed = [r.name for r in results if not r.ok]
    if failed:
        print(f"self-test FAILED: {', '.join(failed)}")
        return 1
    print("self-test passed")
    return 0


def version_text() -> str:
    return f"workroom-app {__version__}"


def early_flags(argv: list[str]) -> int | None:
    """Handle `--version` and `--self-test` before any window exists; None means "start the app".

    `argv` excludes the program name. Called from workroom.ui.main.main and the frozen entry script.
    """
    if "--version" in argv:
        print(version_text())
        return 0
    if "--self-test" in argv:
        return main_self_test()
    return None


if __name__ == "__main__":
    sys.exit(main_self_test())
