"""Hosts and app settings on disk: JSON, written atomically, and never fatal when bad.

A file that cannot be understood is moved aside as `<name>.corrupt-<timestamp>` (kept, never
deleted), the caller gets a `UserError` to show, and the app carries on with defaults.

Every change is a read-modify-write under an advisory lock shared by every workroom process (`locked`, a
`<name>.lock` file beside the data file): the change is applied to what the file holds now, so a change another
process made meanwhile (the app, a `workroom` command, a hand edit) is never written over
(`update_hosts`, `update_settings`, `update_json`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from workroom.core.errors import UserError
from workroom.core.hosts import HostsFile
from workroom.paths import AppPaths
from workroom.regular_file import NotARegularFileError, read_regular_file

if TYPE_CHECKING:  # read where settings are (a look without the app reads hosts only: cli/look.py)
    from workroom.core.app_settings import AppSettings

log = logging.getLogger(__name__)

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
        raw = read_regular_file(path, MAX_FILE_BYTES)
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


def _read(path: Path, model: type[_T]) -> _T | None:
    """What `path` holds now, or None when it is missing or cannot be read or understood: for a process that
    already holds a copy and only wants a newer one (nothing is moved aside: a hand edit may be half done)."""
    try:
        raw = read_regular_file(path, MAX_FILE_BYTES)
        if len(raw) > MAX_FILE_BYTES:
            return None
        return model.model_validate_json(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def read_hosts(paths: AppPaths) -> HostsFile | None:
    """hosts.json as it is now; None when it is missing or damaged (see `_read`)."""
    return _read(paths.hosts_file, HostsFile)


def read_settings(paths: AppPaths) -> AppSettings | None:
    """settings.json as it is now; None when it is missing or damaged (see `_read`)."""
    from workroom.core.app_settings import AppSettings

    return _read(paths.settings_file, AppSettings)


def load_hosts(paths: AppPaths, hostname: str | None = None) -> Loaded[HostsFile]:
    """The user's hosts. First run (no file) or a damaged file: this computer only."""
    default = HostsFile.first_run(this_host_name() if hostname is None else hostname)
    return _load(paths.hosts_file, HostsFile, default, "hosts")


def save_hosts(paths: AppPaths, hosts: HostsFile) -> None:
    _save(paths.hosts_file, hosts)


def load_settings(paths: AppPaths) -> Loaded[AppSettings]:
    """The app settings (ceiling, prompt timeout, ask mode); defaults when missing or damaged."""
    from workroom.core.app_settings import AppSettings

    return _load(paths.settings_file, AppSettings, AppSettings(), "settings")


def save_settings(paths: AppPaths, settings: AppSettings) -> None:
    _save(paths.settings_file, settings)


# -- read-modify-write, locked -----------------------------------------------------------------------------


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the advisory lock of `path` (`<name>.lock` beside it, 0600) for one read-modify-write. Every workroom
    process takes it before it reads a file it is about to write, so two changes never read the same old file.
    It is held for a read and an atomic write (milliseconds); the kernel drops it if the process dies."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _change(path: Path, load: Callable[[], Loaded[_T]], save: Callable[[_T], None],
            change: Callable[[_T], _T], fallback: _T | None) -> _T:
    """`change` applied to what `path` holds now, written back when it changed; all under the file's lock.

    A file that cannot be read is never written over (its problem is raised). A damaged one is moved aside (kept)
    and `change` applied to `fallback` (what the caller last read) when there is one, else to the defaults."""
    with locked(path):
        loaded = load()
        if loaded.problem is not None and loaded.moved_aside_to is None:
            raise loaded.problem
        current = loaded.value
        if loaded.problem is not None:
            log.warning("%s", loaded.problem.info().text())
            current = fallback if fallback is not None else current
        new = change(current)
        if new != current or loaded.problem is not None or not path.exists():
            save(new)
        return new


def update_hosts(paths: AppPaths, change: Callable[[HostsFile], HostsFile], *, hostname: str | None = None,
                 fallback: HostsFile | None = None) -> HostsFile:
    """The hosts after `change`, applied to hosts.json as it is now and saved (raises what `change` raises, a
    UserError when the file cannot be read, OSError when it cannot be written: then nothing changed)."""
    return _change(paths.hosts_file, lambda: load_hosts(paths, hostname), lambda hosts: save_hosts(paths, hosts),
                   change, fallback)


def update_settings(paths: AppPaths, change: Callable[[AppSettings], AppSettings], *,
                    fallback: AppSettings | None = None) -> AppSettings:
    """The settings after `change`, applied to settings.json as it is now and saved (as `update_hosts`)."""
    return _change(paths.settings_file, lambda: load_settings(paths),
                   lambda settings: save_settings(paths, settings), change, fallback)


def read_json_object(path: Path, limit: int) -> dict[str, Any]:
    """A JSON object file the app keeps as a hint or a record (last verdicts, agent places): {} when it is
    missing, damaged, too large or not a regular file (logged, never raised: losing it costs little)."""
    try:
        raw = read_regular_file(path, limit)
        if len(raw) > limit:
            raise ValueError(f"larger than {limit} bytes")
        data = json.loads(raw)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as error:
        log.warning("ignoring an unreadable %s (%s)", path, error)
        return {}
    return data if isinstance(data, dict) else {}


def update_json(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]], *, limit: int) -> dict[str, Any]:
    """`change` applied to the JSON object in `path` as it is now (see `read_json_object`), written back (0600,
    atomically) when it changed; under the file's lock. Raises OSError when it cannot be written."""
    with locked(path):
        current = read_json_object(path, limit)
        new = change(dict(current))
        if new != current:
            atomic_write_bytes(path, json.dumps(new, indent=1).encode())
        return new
