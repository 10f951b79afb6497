"""Reading a file that a user or an earlier run could have replaced, without ever waiting on it.

A FIFO in a file's place makes a plain `open()` wait for a writer for ever (the app's start-up, or a
connect, hangs), and a device can stream without end. Every read of a user- or state-controlled path in
the app goes through `read_regular_file`. This module imports nothing of the app, so the lowest shared
modules (`paths`, `storage`) can both use it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotARegularFileError(OSError):
    """A FIFO, device, socket or directory where a data file belongs."""


def read_regular_file(path: Path | str, limit: int | None) -> bytes:
    """Up to `limit` + 1 bytes of `path` (all of it when `limit` is None), which must be a regular file.

    Opened non-blocking and checked with fstat before any read, so a FIFO or device in the file's place
    raises NotARegularFileError at once (a directory IsADirectoryError, as `open()` would). A caller that
    passes a limit sees a longer result as "too large".
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
        while limit is None or size <= limit:
            chunk = os.read(fd, 1 << 20 if limit is None else limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
