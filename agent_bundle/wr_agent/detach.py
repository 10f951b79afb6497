"""`serve --detach`: start the agent in its own session and return at once, without `setsid(1)`.

`setsid` is a util-linux tool: macOS and many BusyBox hosts do not have it, and a shell's `( ... &)` around a
missing command still exits 0. Python's own `start_new_session` (setsid(2) in the child) works on every
POSIX host, so the agent detaches itself: the child leaves the SSH session's process group and terminal,
and keeps running after the installer's connection closes. See docs/macos.md.
"""

import os
import subprocess
import sys

from wr_agent import log_file

DETACH_FLAG = "--detach"


def run(entry, argv, log_path):
    """Start `entry + argv` (without --detach) in a new session; stdout/stderr go to `log_path` or nowhere.

    Returns 0 once the child exists: whether it serves is for the caller to check on the socket. A `log_path`
    that is not a regular file raises runtime.StartupError (exit log_file.EXIT_BAD_LOG) before anything starts.
    """
    args = list(entry) + [a for a in argv if a != DETACH_FLAG]
    out = subprocess.DEVNULL
    if log_path:
        out = log_file.open_log(log_path)  # raises StartupError for a FIFO, never waits on one
    try:
        child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                 close_fds=True, start_new_session=True, cwd=os.path.expanduser("~"))
    except OSError as exc:
        sys.stderr.write("wr-agent: could not start the detached agent: %s\n" % exc)
        return 1
    finally:
        if log_path:
            os.close(out)
    sys.stdout.write("%d\n" % child.pid)
    return 0
