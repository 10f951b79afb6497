"""The installer's probe, `BUNDLE SOCKET SHA256 KEY_ID [relay]`: what the host has for the agent, one JSON line;
with the agent's key when the app's (KEY_ID, `-` for none) is not it (wr_agent/agent_key.py).

Carried in the app's command (remote/host_python.py); with `relay`, it goes on as the relay when the
installed bundle is SHA256 and an agent runs (docs/protocol.md, transport). Every byte of this file is sent
and compiled on each such reconnect, and only `fcntl, os, stat, sys` are imported up front: keep it short.
"""

import os
import stat
import sys

from wr_agent.agent_key import agent_key, key_id
from wr_agent.agent_process import lock_holder, stopped
from wr_agent.launcher import sha256, unsafe_folder
from wr_agent.state_folder import nearest, unsafe_state_folder

try:
    from _json import encode_basestring_ascii as quote  # json.dumps's quoting, without json's start-up
except ImportError:
    from json.encoder import encode_basestring_ascii as quote

VERSION_IN_INIT = r'__version__ = "([0-9.]+)"'
ASK_TIMEOUT_SECONDS = 3
ASK_SKIP_LINES = 100
PROBE_ID = "probe"


def dumps(value):
    """json.dumps for the answer's values."""
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
    """shutil.which, as a yes or no."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder, name)
        if folder and os.access(path, os.X_OK) and not os.path.isdir(path):
            return True
    return False


def check_install_folder(folder, repaired):
    """(why the folder is unsafe or None, whether what it holds is trusted). A real folder of this user's,
    else unsafe; open to others: closed (in `repaired`), its bundle untrusted; every folder above it safe
    by the launcher's rule."""
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
    """Its sha256 if it is a regular file of this user's alone (no link followed, no FIFO waited on)."""
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
    """A foreign bundle's version, read from its archive: it is never run."""
    try:
        import re
        import zipfile

        with zipfile.ZipFile(path) as z:
            m = re.search(VERSION_IN_INIT, z.read("wr_agent/__init__.py").decode("utf-8"))
        return "wr-agent %s" % m.group(1) if m else "unreadable: no version in the bundle"
    except Exception as e:
        return "unreadable: %s" % e


def lock_held(sock):
    """Whether an agent holds `SOCKET.lock` (a FIFO there is not waited on)."""
    return lock_holder(sock) is not None


def ask_agent(sock):
    """(its build, whether it stalled), as far as the running agent answers."""
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
    return (build if isinstance(build, str) else None), stalled  # the answer's reader takes words or null


def systemd_user():
    """A running systemd user manager that outlives the session (linger)."""
    if not (os.environ.get("XDG_RUNTIME_DIR") and which("systemctl") and which("loginctl")):
        return False
    import subprocess

    p = subprocess.run(["systemctl", "--user", "is-system-running"], capture_output=True, timeout=10)
    linger = subprocess.run(["loginctl", "show-user", str(os.getuid()), "-p", "Linger"],
                            capture_output=True, timeout=10)
    return p.stdout.strip() in (b"running", b"degraded") and linger.stdout.strip() == b"Linger=yes"


def supervisor_named(sock):
    """The supervisor the last start named (a regular file's first 100 characters), or None."""
    try:
        fd = os.open(sock + ".supervisor", os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd) as f:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return f.read(100).strip() or None
    except OSError:
        pass
    return None


def made_key(sock):
    """The agent's key, made (with its folder, private) when missing; None when it cannot be."""
    folder = os.path.dirname(sock)
    try:
        if not os.path.lexists(folder):
            os.makedirs(os.path.dirname(folder), 0o700, exist_ok=True)
            os.mkdir(folder, 0o700)
        return agent_key(sock)
    except OSError:
        return None


def probe(bundle, sock, expected, ask=True, known_key=None):
    """The answer (docs/agent.md); `ask`: ask a running agent too (the probe on its own); `known_key`: the app's
    key's id (`-`: none)."""
    out = {"python": "%d.%d.%d" % sys.version_info[:3], "home": os.path.expanduser("~"),
           "bundle": bundle, "socket": sock, "sha256": None, "version": None, "running": False,
           "systemd_user": False, "repaired": [], "launchd": False, "supervisor": None}
    why, trusted = check_install_folder(os.path.dirname(bundle), out["repaired"])
    why = why or unsafe_state_folder(os.path.dirname(sock), missing_ok=True)
    if why:
        out["unsafe"] = why
        return out
    if known_key is not None:
        key = made_key(sock)
        if key is None or key_id(key) != known_key:
            out["key"] = key  # null: none could be made
    out["sha256"] = bundle_sha256(bundle)
    if out["sha256"] and out["sha256"] != expected and not trusted:
        out["sha256"] = None  # may have been swapped while the folder was open
    if out["sha256"] and out["sha256"] != expected:
        out["version"] = bundle_version(bundle)
    holder = lock_holder(sock)
    out["running"] = holder is not None
    if out["running"] and holder > 1 and stopped(holder):
        out["running_frozen"] = True  # it cannot answer: a relay to it would wait for nothing
    elif out["running"] and ask:
        out["running_build"], out["running_stalled"] = ask_agent(sock)
        if out["running_build"] is None:
            out["running_frozen"] = True  # holds its lock, never said hello
    out["systemd_user"] = systemd_user()
    out["launchd"] = which("launchctl") and not out["systemd_user"]
    out["supervisor"] = supervisor_named(sock)
    # Whoever can write the supervisor's folder chooses what starts.
    config = ("~/.config/systemd/user" if out["systemd_user"] else "~/Library/LaunchAgents" if out["launchd"]
              else None)
    if config is not None:
        why = unsafe_folder(nearest(os.path.expanduser(config)))
        if why:
            out["unsafe"] = why
    return out


def relay_follows(answer, expected):
    """Whether the relay follows (`AgentInstaller.relay_follows` is the same rule)."""
    return (answer["sha256"] is not None and answer["sha256"] == expected and answer["running"]
            and not answer.get("running_frozen"))


def main(argv):
    """`BUNDLE SOCKET SHA256 KEY_ID [relay]`."""
    bundle, sock = os.path.expanduser(argv[0]), os.path.expanduser(argv[1])
    expected, known_key, relay_after = argv[2], argv[3], argv[4:] == ["relay"]
    answer = probe(bundle, sock, expected, ask=not relay_after, known_key=known_key)
    sys.stdout.write(dumps(answer) + "\n")
    sys.stdout.flush()  # the relay writes to the file descriptor
    if relay_after and relay_follows(answer, expected):
        from wr_agent.relay import main as relay

        return relay(["relay", "--socket", sock])
    return 0
