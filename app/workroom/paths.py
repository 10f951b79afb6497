"""Where the app keeps its files. `WORKROOM_HOME` moves every one of them under one directory.

Tests and users who want a self-contained setup set `WORKROOM_HOME`; otherwise the platform's
directories are used (platformdirs: ~/.config, ~/Library/Application Support, ...).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workroom.regular_file import read_regular_file

if TYPE_CHECKING:  # platformdirs is imported only where WORKROOM_HOME does not say where everything is
    import platformdirs

APP_NAME = "workroom"
HOME_ENV = "WORKROOM_HOME"

HOSTS_FILE_NAME = "hosts.json"
SETTINGS_FILE_NAME = "settings.json"
KNOWN_HOSTS_FILE_NAME = "known_hosts"
AGENT_SOCKETS_FILE_NAME = "agent_sockets.json"


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

    @property
    def agent_sockets_file(self) -> Path:
        """Where each host's agent listened at its last connect (providers/agent_sockets.py): only a hint."""
        return self.state_dir / AGENT_SOCKETS_FILE_NAME

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
    import platformdirs

    dirs = platformdirs.PlatformDirs(APP_NAME, appauthor=False)
    return AppPaths(
        config_dir=Path(dirs.user_config_dir),
        state_dir=Path(dirs.user_state_dir),
        cache_dir=Path(dirs.user_cache_dir),
        runtime_dir=_runtime_dir(dirs),
        log_dir=Path(dirs.user_log_dir),
    )


def app_log_folder(env: Mapping[str, str] | None = None) -> Path:
    """Where the app's log is written (platform.logs: ~/Library/Logs/Workroom on macOS, unless a home is set)."""
    from workroom.platform.logs import app_log_dir

    environ = os.environ if env is None else env
    return app_log_dir(app_paths(environ).log_dir, workroom_home_set=bool(environ.get(HOME_ENV, "").strip()))


def profile_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """What another process needs in its environment to be this app profile (a login item starting the app):
    `WORKROOM_HOME` when set, as an absolute path; nothing for the default profile."""
    environ = os.environ if env is None else env
    home = environ.get(HOME_ENV, "").strip()
    return {HOME_ENV: str(Path(home).expanduser().absolute())} if home else {}


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


# -- the local agent's socket folder -------------------------------------------------------------------------
MAX_SOCKET_PATH = 100  # sun_path is 104-108 bytes depending on the platform
SOCKET_DIR_NOTE = "socket-dir"
MAX_NOTE_BYTES = 4096  # a path; anything longer is not a note we wrote
_CS_DARWIN_USER_TEMP_DIR = 65537


class UnsafeFolderError(PermissionError):
    """A folder another user could have made, swapped or entered: nothing in it is trusted."""


def check_private_dir(path: Path) -> None:
    """Raise UnsafeFolderError unless `path` is a real directory (not a symlink), owned by this user,
    with no access for group or others. lstat: a symlink planted in our place is refused, not followed."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFolderError(f"{path} is a symbolic link, not a folder of this user's")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFolderError(f"{path} is not a folder")
    if info.st_uid != os.getuid():
        raise UnsafeFolderError(f"{path} belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise UnsafeFolderError(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})")


def _fits(directory: Path) -> bool:
    return len(str(directory / "agent.sock.lock")) <= MAX_SOCKET_PATH


def _is_private(directory: Path) -> bool:
    try:
        check_private_dir(directory)
    except OSError:
        return False
    return True


def agent_socket_dir(preferred: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where this user's local agent keeps its socket: `preferred` when the path fits in a socket address,
    else a folder only this user can reach, never a predictable name in a shared folder.

    In order: a folder in `$XDG_RUNTIME_DIR` (per user, 0700, made by the login manager); on macOS the
    per-user temp folder (`confstr(_CS_DARWIN_USER_TEMP_DIR)`); otherwise a `mkdtemp` folder (random
    name, made 0700 atomically) whose path is remembered in `preferred`'s parent. Each candidate is
    checked with lstat (a real folder of ours, mode 0700) every time; one that fails is never used.
    """
    if _fits(preferred):
        return preferred
    environ = os.environ if env is None else env
    import hashlib

    tag = hashlib.sha256(str(preferred).encode()).hexdigest()[:10]
    for base in _private_bases(environ):
        candidate = base / f"wr-agent-{tag}"
        if not _fits(candidate):
            continue
        try:
            candidate.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        if _is_private(candidate):
            return candidate
    return _remembered_temp_dir(preferred.parent / SOCKET_DIR_NOTE)


def _private_bases(environ: Mapping[str, str]) -> list[Path]:
    bases = []
    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and Path(runtime).is_absolute() and _is_private(Path(runtime)):
        bases.append(Path(runtime))
    if sys.platform == "darwin":
        try:
            user_temp = os.confstr(_CS_DARWIN_USER_TEMP_DIR)
        except (OSError, ValueError):
            user_temp = None
        if user_temp and _is_private(Path(user_temp.rstrip("/"))):
            bases.append(Path(user_temp.rstrip("/")))
    return bases


def _remembered_temp_dir(note: Path) -> Path:
    try:
        # Non-blocking, regular files only: a FIFO planted at the note must not hang the app's start.
        remembered = Path(read_regular_file(note, MAX_NOTE_BYTES).decode("utf-8").strip())
    except (OSError, UnicodeDecodeError, ValueError):
        remembered = None
    if remembered is not None and remembered.is_absolute() and _fits(remembered) and _is_private(remembered):
        return remembered
    # Gone (a reboot cleaned /tmp) or not ours any more: a fresh random folder, never the old name.
    import tempfile

    fresh = Path(tempfile.mkdtemp(prefix="wr-", dir="/tmp"))
    note.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = note.with_name(f".{note.name}.{os.getpid()}.tmp")
    tmp.write_text(str(fresh) + "\n", encoding="utf-8")
    os.replace(tmp, note)
    return fresh
