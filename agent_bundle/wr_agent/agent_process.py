"""Is the process behind an agent's lock this user's agent for that socket? Nothing on a host is signalled unless
it is: a lock file anyone could have written names a pid, and that pid could be any process of the login user's.

A process is this user's agent for SOCKET when it runs as this user, its command line is the agent serving that
socket (`serve --socket=SOCKET`), and — where the kernel lists locks (/proc/locks, Linux) — it is the process that
holds SOCKET.lock's flock. The app carries this file's text in its commands (remote/host_python.py), so it must
stay standard library only and Python 3.8.
"""

import fcntl
import os
import subprocess


def lock_holder(sock):
    """The pid written in `SOCKET.lock` while someone holds the lock (-1 when it cannot be read); None when the
    lock is free or absent: nobody serves."""
    try:
        fd = os.open(sock + ".lock", os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        except OSError:
            pass
        try:
            return int(os.pread(fd, 32, 0).split()[0])
        except (OSError, ValueError, IndexError):
            return -1
    finally:
        os.close(fd)


def _linux_facts(pid):
    """(uid, argv) of `pid` from /proc, or None when it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except (OSError, ValueError, StopIteration):
        return None
    return uid, argv


def _ps_facts(pid):
    """(uid, argv split on spaces) of `pid` as ps tells it (systems without /proc), or None."""
    try:
        p = subprocess.run(["ps", "-o", "uid=,args=", "-p", str(pid)], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    parts = p.stdout.decode("utf-8", "replace").split()
    if p.returncode != 0 or len(parts) < 2:
        return None
    try:
        return int(parts[0]), parts[1:]
    except ValueError:
        return None


def holds_flock(pid, path, locks="/proc/locks"):
    """Whether the kernel lists `pid` as holding a flock on `path`; None when it lists no locks (not Linux)."""
    try:
        st = os.stat(path)
        with open(locks) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[4] == str(pid) and fields[5] == want:
            return True
    return False


def serves(argv, sock):
    """Whether a command line names `sock` as the socket it serves (`--socket=SOCK` or `--socket SOCK`)."""
    if "--socket=%s" % sock in argv:
        return True
    return any(a == "--socket" and b == sock for a, b in zip(argv, argv[1:]))  # noqa: RUF007 (pairwise: 3.10+)


def why_not_our_agent(pid, sock):
    """None when `pid` is this user's agent serving `sock`; else why not, in words."""
    if not isinstance(pid, int) or pid <= 1:
        return "the agent's lock names no process"
    facts = _linux_facts(pid) if os.path.isdir("/proc/%d" % pid) else _ps_facts(pid)
    if facts is None:
        return "process %d is gone" % pid
    uid, argv = facts
    if uid != os.getuid():
        return "process %d runs as another user" % pid
    if "serve" not in argv or not serves(argv, sock):
        return "process %d is not the agent serving %s" % (pid, sock)
    held = holds_flock(pid, sock + ".lock")
    if held is False:
        return "process %d does not hold the agent's lock" % pid
    return None


def stopped(pid):
    """Whether `pid` is stopped (a SIGSTOP, a debugger): it cannot answer or tick. False where it cannot tell."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("T", "t")
