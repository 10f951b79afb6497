"""Hosts and app settings on disk: JSON, written atomically, and never fatal when bad.

A file that cannot be understood is moved aside as `<name>.corrupt-<timestamp>` (kept, never
deleted), the caller gets a `UserError` to show, and the app carries on with defaults.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from workroom.core.app_settings import AppSettings
from workroom.core.errors import UserError
from workroom.core.hosts import HostsFile
from workroom.paths import AppPaths

FILE_MODE = 0o600
MAX_FILE_BYTES = 4 * 1024 * 1024
"""Larger than any real hosts or settings file; a bigger one is treated as corrupt, not read."""

_T = TypeVar("_T", bound=BaseModel)
_V = TypeVar("_V")


@dataclass(frozen=True)
class Loaded(Generic[_V]):
    """A loaded value, and the problem met on the way (if any) for the app to show."""

    value: _V
    problem: UserError | None = None
    moved_aside_to: Path | None = None


def atomic_write_bytes(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace `path` with `data` so a reader sees the old file or the new one, never a mix.

    Temp file in the same directory, fsync, os.replace, then fsync the directory so the rename
    itself survives a crash.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename is still atomic
    finally:
        os.close(dir_fd)


def _save(path: Path, model: BaseModel) -> None:
    atomic_write_bytes(path, (model.model_dump_json(indent=2) + "\n").encode("utf-8"))


def _move_aside(path: Path, now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
        counter += 1
    os.replace(path, target)
    return target


def _why(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        return f"{where}: {first['msg']}{more}"
    if isinstance(error, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(error, json.JSONDecodeError):
        return f"it is not valid JSON (line {error.lineno}, column {error.colno})"
    return str(error)


class NotARegularFileError(OSError):
    """A FIFO, device, socket or directory where a data file belongs."""


def read_regular_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """Up to `limit` + 1 bytes of `path`, which must be a regular file.

    Opened non-blocking and checked with fstat before any read: a FIFO in the file's place would
    otherwise block the app's start-up until someone writes to it, and a device could stream for ever.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotARegularFileError(f"{path} is not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


LEFTOVER_AGE_SECONDS = 60.0
"""A temp file of atomic_write_bytes older than this belongs to a save that died (a crash mid-write);
a younger one may be another app process's save in progress, so it is left alone."""


def remove_leftovers(path: Path, now: float | None = None) -> list[Path]:
    """Delete the stale temp files that interrupted saves of `path` left beside it."""
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        candidates = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return removed
    for leftover in candidates:
        try:
            info = leftover.lstat()
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime > LEFTOVER_AGE_SECONDS:
                leftover.unlink()
                removed.append(leftover)
        except OSError:
            pass
    return removed


def _load(path: Path, model: type[_T], default: _T, what: str) -> Loaded[_T]:
    remove_leftovers(path)
    try:
        raw = read_regular_file(path)
    except FileNotFoundError:
        return Loaded(default)
    except NotARegularFileError as error:
        return _damaged(path, error, default, what)
    except OSError as error:
        # Not moved aside: we could not read it, so we cannot judge it (and likely not move it).
        problem = UserError(
            f"Could not read the {what} file",
            f"{path} could not be opened ({error.strerror or error}); using defaults for now.",
            "Check the file's permissions, then restart the app.",
        )
        return Loaded(default, problem)
    try:
        if len(raw) > MAX_FILE_BYTES:
            raise ValueError(f"it is larger than {MAX_FILE_BYTES} bytes")
        value = model.model_validate_json(raw.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        return _damaged(path, error, default, what)
    return Loaded(value)


def _damaged(path: Path, error: Exception, default: _T, what: str) -> Loaded[_T]:
    why = "it is not a regular file" if isinstance(error, NotARegularFileError) else _why(error)
    try:
        aside: Path | None = _move_aside(path)
    except OSError:
        aside = None
    kept = f"It was kept as {aside}." if aside else "It could not be moved aside and was left in place."
    problem = UserError(
        f"The {what} file was damaged",
        f"{path} could not be used: {why}. {kept}",
        f"The app started with default {what}; fix or delete the kept file to recover anything in it.",
    )
    return Loaded(default, problem, aside)


def this_host_name() -> str:
    """This machine's hostname (the local host is named for its short form)."""
    return socket.gethostname()


def load_hosts(paths: AppPaths, hostname: str | None = None) -> Loaded[HostsFile]:
    """The user's hosts. First run (no file) or a damaged file: this computer only."""
    default = HostsFile.first_run(this_host_name() if hostname is None else hostname)
    return _load(paths.hosts_file, HostsFile, default, "hosts")


def save_hosts(paths: AppPaths, hosts: HostsFile) -> None:
    _save(paths.hosts_file, hosts)


def load_settings(paths: AppPaths) -> Loaded[AppSettings]:
    """The app settings (ceiling, prompt timeout, ask mode); defaults when missing or damaged."""
    return _load(paths.settings_file, AppSettings, AppSettings(), "settings")


def save_settings(paths: AppPaths, settings: AppSettings) -> None:
    _save(paths.settings_file, settings)
