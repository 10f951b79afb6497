"""The `--log` file of `serve` and `serve --detach`: opened to append without ever blocking, and only when
it is a regular file.

Opening a FIFO to write waits for a reader for ever, and both open the log before the lock is taken, so
such a start would hang silently; a device or a socket is no log either. The path is followed like the
agent's other files (a symbolic link to a regular file is a log) and judged by what was opened. Anything
else refuses to start with EXIT_BAD_LOG, said in one line."""

import errno
import fcntl
import os
import stat

from wr_agent.runtime import StartupError

EXIT_BAD_LOG = 4


def open_log(path):
    """A blocking fd appending to the regular file `path` (created 0600); raises StartupError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO nobody reads, a socket, a folder
            raise _not_a_file(path) from None
        raise StartupError("cannot open the log file %s: %s" % (path, exc.strerror or exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_a_file(path, mode)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_a_file(path, mode=None):
    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = 0
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "something else")
    return StartupError("refusing to start: the log file %s is %s, not a regular file; move it away or give "
                        "--log another path" % (path, kind), EXIT_BAD_LOG)
