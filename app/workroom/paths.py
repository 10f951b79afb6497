"""Where the app keeps its files. `WORKROOM_HOME` moves every one of them under one directory.

Tests and users who want a self-contained setup set `WORKROOM_HOME`; otherwise the platform's
directories are used (platformdirs: ~/.config, ~/Library/Application Support, ...).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "workroom"
HOME_ENV = "WORKROOM_HOME"

HOSTS_FILE_NAME = "hosts.json"
SETTINGS_FILE_NAME = "settings.json"
KNOWN_HOSTS_FILE_NAME = "known_hosts"


@dataclass(frozen=True)
class AppPaths:
    """Every directory and file the app owns."""

    config_dir: Path
    state_dir: Path
    cache_dir: Path
    runtime_dir: Path
    log_dir: Path

    @property
    def hosts_file(self) -> Path:
        return self.config_dir / HOSTS_FILE_NAME

    @property
    def settings_file(self) -> Path:
        return self.config_dir / SETTINGS_FILE_NAME

    @property
    def known_hosts_file(self) -> Path:
        """The app's own known_hosts (the user's ~/.ssh/known_hosts is only read)."""
        return self.config_dir / KNOWN_HOSTS_FILE_NAME

    def ensure(self) -> AppPaths:
        """Create the directories (mode 0700: they hold host lists, keys' paths and sockets)."""
        for directory in (self.config_dir, self.state_dir, self.cache_dir, self.runtime_dir, self.log_dir):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self


def app_paths(env: Mapping[str, str] | None = None) -> AppPaths:
    """The paths for this process (`env` defaults to os.environ)."""
    environ = os.environ if env is None else env
    home = environ.get(HOME_ENV, "").strip()
    if home:
        root = Path(home).expanduser().absolute()
        return AppPaths(
            config_dir=root / "config",
            state_dir=root / "state",
            cache_dir=root / "cache",
            runtime_dir=root / "runtime",
            log_dir=root / "logs",
        )
    dirs = platformdirs.PlatformDirs(APP_NAME, appauthor=False)
    return AppPaths(
        config_dir=Path(dirs.user_config_dir),
        state_dir=Path(dirs.user_state_dir),
        cache_dir=Path(dirs.user_cache_dir),
        runtime_dir=_runtime_dir(dirs),
        log_dir=Path(dirs.user_log_dir),
    )


def _runtime_dir(dirs: platformdirs.PlatformDirs) -> Path:
    # Without XDG_RUNTIME_DIR platformdirs warns and falls back to a shared /tmp path; the cache
    # directory is private to the user, so sockets go there instead.
    if os.name == "posix" and not os.environ.get("XDG_RUNTIME_DIR") and not _is_macos():
        return Path(dirs.user_cache_dir) / "run"
    return Path(dirs.user_runtime_dir)


def _is_macos() -> bool:
    return os.uname().sysname == "Darwin"


def frozen_data_dir() -> Path | None:
    """Where a frozen (PyInstaller) app keeps its bundled files (`sys._MEIPASS`); None when not frozen.

    The one place that knows how a frozen app is laid out: the agent bundle and the icons are both found
    through it."""
    meipass = getattr(sys, "_MEIPASS", None)
    return Path(meipass) if meipass and getattr(sys, "frozen", False) else None
