"""A job step retrying a file lock another process holds (docs/agent.md, "A job waiting on a peer").

A lock asked for and not given blocks in the kernel (`flock`, `fcntl(F_SETLKW)`: the sampler's "lock" kind). Some
tools ask without blocking and sleep between tries instead: SQLite's busy handler (`.timeout`, `busy_timeout`)
calls `fcntl(F_SETLK)`, gets EAGAIN and sleeps 1 to 100 ms before the next try, for as long as its timeout. Seen
from /proc that is a process in timer sleeps that keeps waking, which is how a daemon's heartbeat looks and does
not count. What tells them apart is what it asked for: it has open a file on which another process holds a lock
(/proc/locks names each holder's pid and the file's device and inode), and its parent waits for it (a job step,
as job_wait says). While both hold, the step is waiting on the lock: work, reason `lock`.

Read at most every RECHECK seconds for a process, and only for sleepers already seen to wake whose parent waits:
one read of /proc/locks, then one stat per open descriptor of the sleeper, only when some lock is held by another.
"""

import os

RECHECK = 5.0  # seconds between asking again whether a retrying sleeper's file is still locked by another
FDS_MAX = 256  # descriptors of one process looked at (one with more is judged on the first ones)
LOCK_KINDS = frozenset(("POSIX", "FLOCK", "OFDLCK"))


def held_locks(root):
    """{(major, minor, inode): {holder pids}} from `root`/locks; waiters' lines ("->") are not holders. An OFD
    lock's holder is -1 (no process): it is another's for everyone. {} when not readable."""
    try:
        with open(root + "/locks", "rb") as f:
            raw = f.read(1 << 20)
    except OSError:
        return {}
    held = {}
    for line in raw.split(b"\n"):
        parts = line.split()
        if len(parts) < 6 or parts[1] == b"->" or parts[1].decode("ascii", "replace") not in LOCK_KINDS:
            continue
        try:
            pid = int(parts[4])
            major, minor, inode = parts[5].split(b":")
            key = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        held.setdefault(key, set()).add(pid)
    return held


def locked_by_another(root, pid, held):
    """Whether `pid` has open a file (by its device and inode) on which a process other than itself holds a lock,
    given `held` from held_locks. Only the first FDS_MAX descriptors are looked at."""
    if not held:
        return False
    fd_dir = "%s/%s/fd" % (root, pid)
    try:
        names = os.listdir(fd_dir)[:FDS_MAX]
    except OSError:
        return False
    me = int(pid)
    for fd in names:
        try:
            st = os.stat(fd_dir + "/" + fd)
        except OSError:
            continue
        holders = held.get((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
        if holders and any(h != me for h in holders):
            return True
    return False
