"""The installer's probe: what a host has for the agent, as one JSON line the app reads (docs/agent.md).

`install_probe BUNDLE SOCKET SHA256 [relay]` answers: the host's Python, the home, the bundle's and the
socket's paths (`~` expanded), the installed bundle's sha256 (and, when it is not SHA256, its version read
from the archive: a bundle of unknown hash is never run), whether an agent runs (its lock is held), whether a
systemd user manager with linger or launchd is there, which supervisor the last start named, and "unsafe"
with why when a folder the agent or its supervisor's file would live in could be written by another user.

The app never runs this from the installed bundle: it carries this file's text in its command, from its own
bundle (remote/host_python.py), so the probe is the app's even when the host's bundle is not. With `relay`,
and when the installed bundle is SHA256 and an agent runs, the same process goes on as the relay on the same
stream, its answer the stream's first line (docs/protocol.md, transport). That is the reconnect's hot path:
only `fcntl, os, stat, sys` are imported up front (json's start-up, with re's, cost ~18 ms of CPU here), the
rest where it is needed.
"""

import fcntl
import os
import stat
import sys

from wr_agent.launcher import sha256, unsafe_folder

try:
    from _json import encode_basestring_ascii as quote  # json.dumps's own quoting, without json's start-up
except ImportError:  # an interpreter without the C accelerator
    from json.encoder import encode_basestring_ascii as quote

VERSION_IN_INIT = r'__version__ = "([0-9.]+)"'
ASK_TIMEOUT_SECONDS = 3
ASK_SKIP_LINES = 100
PROBE_ID = "probe"


def dumps(value):
    """`json.dumps(value)` for the answer's values (dicts, lists, text, booleans, None, integers)."""
    if isinstance(value, dict):
        return "{" + ", ".join(quote(k) + ": " + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    if isinstance(value, str):
        return quote(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return str(int(value))


def which(name):
    """Whether `name` is an executable on PATH (shutil.which's answer, without shutil)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder, name)
        if folder and os.access(path, os.X_OK) and not os.path.isdir(path):
            return True
    return False


def nearest(path):
    """`path`, or the nearest folder above it that exists (what an absent folder would be made in)."""
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def check_install_folder(folder, repaired):
    """(why the install folder is unsafe or None, whether what it holds may be trusted).

    It decides who could have written the bundle: it must be a real folder of this user's that nobody else
    can write to. One of ours but open to others is closed (its path added to `repaired`), and what it holds
    is not trusted. An absent folder is fine (the push makes it). Then every folder above it, by the
    launcher's rule (OpenSSH's safe_path)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        st = None
    trusted = True
    if st is not None:
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            return "%s is not a folder (a symbolic link or a file)" % folder, trusted
        if st.st_uid != os.getuid():
            return "%s belongs to uid %d, not to this user (uid %d)" % (folder, st.st_uid, os.getuid()), trusted
        if st.st_mode & 0o022:
            os.chmod(folder, stat.S_IMODE(st.st_mode) & ~0o077)
            repaired.append(folder)
            trusted = False
    return unsafe_folder(nearest(os.path.dirname(folder))), trusted


def bundle_sha256(path):
    """The installed bundle's sha256 (the launcher's hash), or None unless it is a regular file of this
    user's that nobody else can write. Opened without following a link and without waiting on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
                h = sha256()
                h.update(f.read())
                return h.hexdigest()
    except OSError:
        pass
    return None


def bundle_version(path):
    """The version of a bundle whose hash is not ours, read from its archive, never by running it."""
    try:
        import re
        import zipfile

        with zipfile.ZipFile(path) as z:
            m = re.search(VERSION_IN_INIT, z.read("wr_agent/__init__.py").decode("utf-8"))
        return "wr-agent %s" % m.group(1) if m else "unreadable: no version in the bundle"
    except Exception as e:
        return "unreadable: %s" % e


def lock_held(sock):
    """Whether an agent holds `SOCKET.lock` (one agent per socket). A FIFO there must not stall the probe."""
    try:
        fd = os.open(sock + ".lock", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def ask_agent(sock):
    """(the running agent's build, whether it stalled), asked on its socket: what it said before it stopped
    answering, else (None, False). Only the probe on its own asks: before a relay, the app reads both from
    the relay's own stream."""
    build, stalled = None, False
    try:
        import json
        import socket

        s = socket.socket(socket.AF_UNIX)
        try:
            s.settimeout(ASK_TIMEOUT_SECONDS)
            s.connect(sock)
            f = s.makefile("rwb")
            build = json.loads(f.readline()).get("build")
            f.write(('{"id":"%s","method":"status"}\n' % PROBE_ID).encode())
            f.flush()
            for _ in range(ASK_SKIP_LINES):  # skip events; the reply carries our id
                reply = json.loads(f.readline())
                if reply.get("id") == PROBE_ID:
                    stalled = (reply.get("result") or {}).get("stalled") is True
                    break
        finally:
            s.close()
    except (OSError, ValueError, AttributeError):
        pass
    return build, stalled


def systemd_user():
    """A systemd user manager that outlives the app's session: running, and this user lingers (without
    linger it stops, with the agent, soon after the last session ends; the agent's own supervisor does not)."""
    if not (os.environ.get("XDG_RUNTIME_DIR") and which("systemctl") and which("loginctl")):
        return False
    import subprocess

    p = subprocess.run(["systemctl", "--user", "is-system-running"], capture_output=True, timeout=10)
    linger = subprocess.run(["loginctl", "show-user", str(os.getuid()), "-p", "Linger"],
                            capture_output=True, timeout=10)
    return p.stdout.strip() in (b"running", b"degraded") and linger.stdout.strip() == b"Linger=yes"


def supervisor_named(sock):
    """What the last start wrote in `SOCKET.supervisor` (at most 100 characters), or None. Only a regular
    file names one (a FIFO or device there names none, and is not waited on)."""
    try:
        fd = os.open(sock + ".supervisor", os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd) as f:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return f.read(100).strip() or None
    except OSError:
        pass
    return None


def probe(bundle, sock, expected, ask=True):
    """The answer for the installed `bundle` and `sock` (both `~`-expanded), the app's hash `expected`; `ask`:
    ask a running agent its build and whether it stalled (the probe on its own)."""
    out = {"python": "%d.%d.%d" % sys.version_info[:3], "home": os.path.expanduser("~"),
           "bundle": bundle, "socket": sock, "sha256": None, "version": None, "running": False,
           "systemd_user": False, "repaired": [], "launchd": False, "supervisor": None}
    why, trusted = check_install_folder(os.path.dirname(bundle), out["repaired"])
    if why:
        out["unsafe"] = why
        return out
    out["sha256"] = bundle_sha256(bundle)
    if out["sha256"] and out["sha256"] != expected and not trusted:
        out["sha256"] = None  # may have been swapped while the folder was open: replace it, never run it
    if out["sha256"] and out["sha256"] != expected:
        out["version"] = bundle_version(bundle)
    out["running"] = lock_held(sock)
    if out["running"] and ask:
        out["running_build"], out["running_stalled"] = ask_agent(sock)
    out["systemd_user"] = systemd_user()
    # launchd: macOS. A LaunchAgent needs the user's GUI domain; the installer falls back when it is absent.
    out["launchd"] = which("launchctl") and not out["systemd_user"]
    out["supervisor"] = supervisor_named(sock)
    # The folder the supervisor's own file goes in: whoever can write there chooses what starts.
    config = ("~/.config/systemd/user" if out["systemd_user"] else "~/Library/LaunchAgents" if out["launchd"]
              else None)
    if config is not None:
        why = unsafe_folder(nearest(os.path.expanduser(config)))
        if why:
            out["unsafe"] = why
    return out


def relay_follows(answer, expected):
    """Whether the probe goes on as the relay: the installed bundle is `expected` and an agent runs (the
    app's `AgentInstaller.relay_follows` is the same rule)."""
    return answer["sha256"] is not None and answer["sha256"] == expected and answer["running"]


def main(argv):
    """`BUNDLE SOCKET SHA256 [relay]`: print the answer; with `relay`, go on as the relay when it follows."""
    bundle, sock = os.path.expanduser(argv[0]), os.path.expanduser(argv[1])
    expected, relay_after = argv[2], argv[3:] == ["relay"]
    answer = probe(bundle, sock, expected, ask=not relay_after)
    sys.stdout.write(dumps(answer) + "\n")
    sys.stdout.flush()  # the answer leads the stream: the relay writes to the file descriptor itself
    if relay_after and relay_follows(answer, expected):
        # The relay's code came with this command, from the app's own bundle -- the bytes the installed file's
        # hash was just checked against -- so nothing of the installed file is read again after its check.
        from wr_agent.relay import main as relay

        return relay(["relay", "--socket", sock])
    return 0
