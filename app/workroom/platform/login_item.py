"""Open at login: the app's own login item on macOS, an XDG autostart entry on Linux.

macOS 13+: `SMAppService.mainAppService` registers the app itself (System Settings › General › Login Items
lists it under the app's name; the user can turn it off there, and `status` then says so), through the same
Objective-C seam as the other Cocoa calls (platform.macos). Linux: a desktop entry in
`$XDG_CONFIG_HOME/autostart` (the freedesktop Desktop Application Autostart spec), which every XDG session
(GNOME, KDE, Xfce, `dex -a`) starts at login. The entry carries `WORKROOM_HOME` when the app runs with one, so
a second profile starts as itself; its file name is then tagged with it so two profiles do not share one. The
caller names that environment (`profile_env`): this layer knows nothing of the app's paths.

The state lives in the system, not in settings.json: what the pane shows is read back each time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from workroom.platform.macos import ObjcBridge, bridge

log = logging.getLogger(__name__)

APP_NAME = "Workroom"
SERVICE_MANAGEMENT = "/System/Library/Frameworks/ServiceManagement.framework/ServiceManagement"


class LoginItemState(Enum):
    OFF = "off"
    ON = "on"
    NEEDS_APPROVAL = "needs approval"  # macOS: registered, waiting for the user in System Settings
    UNAVAILABLE = "unavailable"


class LoginItemError(OSError):
    """The login item could not be changed; the message says what happened, in words."""


class LoginItem(Protocol):
    def state(self) -> LoginItemState: ...
    def enable(self) -> None: ...
    def disable(self) -> None: ...
    def where(self) -> str: ...


def launch_command(profile_env: Mapping[str, str]) -> list[str]:
    """How a login session starts this app: the frozen binary, the `workroom-app` script beside this Python,
    or this Python with the module; with `env NAME=value …` in front for the profile's environment."""
    if getattr(sys, "frozen", False):
        argv = [sys.executable]
    else:
        script = Path(sys.executable).with_name("workroom-app")
        argv = [str(script)] if script.is_file() and os.access(script, os.X_OK) else \
            [sys.executable, "-m", "workroom.ui.main"]
    if profile_env:
        argv = ["env", *(f"{name}={value}" for name, value in sorted(profile_env.items())), *argv]
    return argv


def desktop_exec(argv: list[str]) -> str:
    """An Exec value per the Desktop Entry spec: arguments with reserved characters in double quotes, with
    `"`, `` ` ``, `$` and `\\` escaped inside them, and a literal `%` doubled (it starts a field code)."""
    out = []
    for arg in argv:
        arg = arg.replace("%", "%%")
        if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`'):
            out.append(arg)
        else:
            escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
            out.append(f'"{escaped}"')
    return " ".join(out)


def desktop_entry(argv: list[str]) -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        f"Name={APP_NAME}",
        "Comment=Keeps your remote workrooms honest about sleep",
        f"Exec={desktop_exec(argv)}",
        "Terminal=false",
        "X-GNOME-Autostart-enabled=true",
        "",
    ])


@dataclass
class XdgAutostart:
    """Linux (and other XDG desktops): `$XDG_CONFIG_HOME/autostart/workroom[-<profile tag>].desktop`."""

    environ: Mapping[str, str]
    profile_env: Mapping[str, str]

    @property
    def path(self) -> Path:
        config = self.environ.get("XDG_CONFIG_HOME", "").strip()
        base = Path(config) if config and Path(config).is_absolute() else Path.home() / ".config"
        profile = "\n".join(f"{k}={v}" for k, v in sorted(self.profile_env.items()))
        tag = "-" + hashlib.sha256(profile.encode()).hexdigest()[:8] if profile else ""
        return base / "autostart" / f"workroom{tag}.desktop"

    def where(self) -> str:
        return str(self.path)

    def state(self) -> LoginItemState:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return LoginItemState.OFF
        except OSError:
            return LoginItemState.UNAVAILABLE
        lines = {line.strip().lower() for line in text.splitlines()}
        if "hidden=true" in lines or "x-gnome-autostart-enabled=false" in lines:
            return LoginItemState.OFF  # turned off by the desktop's own settings
        return LoginItemState.ON

    def enable(self) -> None:
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(desktop_entry(launch_command(self.profile_env)), encoding="utf-8")
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except OSError as exc:
            raise LoginItemError(f"Could not write {path}: {exc.strerror or exc}") from exc
        log.info("open at login: wrote %s", path)

    def disable(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise LoginItemError(f"Could not remove {self.path}: {exc.strerror or exc}") from exc
        log.info("open at login: removed %s", self.path)


# SMAppServiceStatus
_SM_NOT_REGISTERED, _SM_ENABLED, _SM_REQUIRES_APPROVAL, _SM_NOT_FOUND = 0, 1, 2, 3


@dataclass
class MacLoginItem:
    """macOS 13+: the app's own login item (SMAppService.mainAppService), through the Objective-C seam."""

    seam: ObjcBridge

    def _service(self) -> Any:
        cls = self.seam.cls("SMAppService")
        return self.seam.msg(cls, "mainAppService") if cls else 0

    def where(self) -> str:
        return "System Settings › General › Login Items"

    def state(self) -> LoginItemState:
        service = self._service()
        if not service:
            return LoginItemState.UNAVAILABLE
        status = self.seam.msg(service, "status")
        return {_SM_ENABLED: LoginItemState.ON, _SM_REQUIRES_APPROVAL: LoginItemState.NEEDS_APPROVAL,
                _SM_NOT_REGISTERED: LoginItemState.OFF}.get(status, LoginItemState.UNAVAILABLE)

    def enable(self) -> None:
        service = self._service()
        if not service or not self.seam.msg(service, "registerAndReturnError:", 0):
            raise LoginItemError("macOS did not add Workroom to the login items. Add it in System Settings › "
                                 "General › Login Items.")
        log.info("open at login: registered the app's login item")

    def disable(self) -> None:
        service = self._service()
        if service and not self.seam.msg(service, "unregisterAndReturnError:", 0):
            raise LoginItemError("macOS did not remove Workroom from the login items. Remove it in System "
                                 "Settings › General › Login Items.")
        log.info("open at login: unregistered the app's login item")


def login_item(profile_env: Mapping[str, str], environ: Mapping[str, str] | None = None) -> LoginItem | None:
    """This computer's way to open the app at login, or None where there is none. `profile_env`: what the
    started app needs in its environment to be this profile (empty for the default one)."""
    env = os.environ if environ is None else environ
    if sys.platform == "darwin":
        seam = bridge()
        if seam is None:
            return None
        try:
            import ctypes

            ctypes.cdll.LoadLibrary(SERVICE_MANAGEMENT)
        except OSError as exc:
            log.warning("open at login: ServiceManagement unavailable: %s", exc)
            return None
        return MacLoginItem(seam)
    if os.name == "posix":
        return XdgAutostart(env, profile_env)
    return None
