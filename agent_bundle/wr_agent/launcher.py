"""The launcher: who could have changed the agent is checked, and its sha256, before a byte of it runs.

The systemd unit, the launchd plist, the agent's own supervisor and the installer never start the bundle by
its path alone (a folder above it open to another user let them swap it, and the next restart ran their code
as this user). They run this file's text, passed on the command line (base64, so that sh, systemd and
launchd all carry it unchanged), with the expected hash beside it: outside the bundle, since the bundle is
what would be swapped:

    python3 -c "import base64;exec(base64.b64decode('…'))" SHA256 BUNDLE FOLDER ARGS...

It refuses (one line on stderr, exit 5) unless BUNDLE's folder and every folder above it, and FOLDER (the
supervisor's own folder, or empty), pass `unsafe_folder` (OpenSSH's safe_path: up to the home, owned by
this user or root and writable by nobody else; above the home, root's and not writable by others, a sticky
folder such as /tmp excepted), BUNDLE is a regular file of this user's that nobody else can write, and its
sha256 is SHA256. Then it executes `python3 -I -S BUNDLE ARGS...`, telling the agent (WR_AGENT_LAUNCH) how it was
launched, so the agent's own restarts and hand-offs go through here again. Standard library only; imports
nothing of the agent. See docs/security.md.
"""

import os
import stat
import sys

# json and hashlib are imported where they are used: the install probe carries this file, and a reconnect's
# probe runs without them (measured on a busy host: json's start-up, with re's, ~18 ms of CPU; hashlib's, which
# loads OpenSSL, ~6 ms; the whole probe-then-relay then took ~38 ms).

EXIT_REFUSED = 5
# How the bundle is run: the agent needs the standard library only. No site (-S: a distribution's .pth files
# import what they like, setuptools' among them: ~5 MB resident for nothing), no PYTHON* variables and no user
# site (-I: nothing of the user's environment decides what the agent imports).
AGENT_FLAGS = ("-I", "-S")
RECORD_ENV = "WR_AGENT_LAUNCH"
MAX_BUNDLE_BYTES = 64 << 20


def sha256():
    """A new sha256 hash: the interpreter's own (the same digest) where it has one, else hashlib's."""
    for name in ("_sha2", "_sha256"):  # Python 3.12+, 3.8-3.11
        try:
            return __import__(name).sha256()
        except (ImportError, AttributeError, ValueError):  # ValueError: a build that forbids it (FIPS)
            pass
    import hashlib

    return hashlib.sha256()


def unsafe_folder(path, home=None, uid=None):
    """None when `path` and every folder above it are safe for this user's code, else why not (words)."""
    uid = os.getuid() if uid is None else uid
    home = os.path.realpath(home or os.path.expanduser("~"))
    at = os.path.realpath(path)
    under_home = at == home or at.startswith(home.rstrip("/") + "/")
    while True:
        try:
            st = os.stat(at)
        except OSError as exc:
            return "%s cannot be checked (%s)" % (at, exc.strerror or exc)
        if not stat.S_ISDIR(st.st_mode):
            return "%s is not a folder" % at
        above_home = under_home and len(at) < len(home)
        if st.st_uid != 0 and (above_home or st.st_uid != uid):
            return "%s belongs to uid %d, not to this user (uid %d) or root" % (at, st.st_uid, uid)
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o022 and not (st.st_uid == 0 and mode & stat.S_ISVTX):
            return "%s is writable by %s (mode %o; run chmod go-w %s)" % (
                at, "other users" if mode & 0o002 else "its group", mode, at)
        parent = os.path.dirname(at)
        if parent == at:
            return None
        at = parent


def unsafe_bundle(path, expected, uid=None):
    """None when `path` is a regular file of this user's that nobody else can write, with sha256 `expected`."""
    uid = os.getuid() if uid is None else uid
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return "%s cannot be opened (%s)" % (path, exc.strerror or exc)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "%s is not a regular file" % path
        if st.st_uid != uid or st.st_mode & 0o022:
            return "%s is not this user's alone (uid %d, mode %o)" % (path, st.st_uid, stat.S_IMODE(st.st_mode))
        h, size = sha256(), 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_BUNDLE_BYTES:
                return "%s is larger than any agent" % path
            h.update(chunk)
    finally:
        os.close(fd)
    if h.hexdigest() != expected:
        return "%s has sha256 %s, not the expected %s" % (path, h.hexdigest(), expected)
    return None


def launch(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3:
        sys.stderr.write("wr-agent launcher: usage: SHA256 BUNDLE FOLDER ARGS...\n")
        sys.exit(2)
    expected, bundle, folder, args = argv[0].lower(), os.path.abspath(os.path.expanduser(argv[1])), argv[2], argv[3:]
    why = (unsafe_folder(os.path.dirname(bundle)) or (folder and unsafe_folder(os.path.expanduser(folder)))
           or unsafe_bundle(bundle, expected))
    if why:
        sys.stderr.write("wr-agent: refusing to start the agent: %s\n" % why)
        sys.stderr.flush()
        os._exit(EXIT_REFUSED)
    import json

    env = dict(os.environ)
    env[RECORD_ENV] = json.dumps({"sha256": expected, "bundle": bundle, "folder": folder})
    os.execve(sys.executable, [sys.executable, *AGENT_FLAGS, bundle, *args], env)


# -- the agent's side: how it was launched, and launching again the same way -------------------------------
LAUNCH_CALL = "\nlaunch()\n"
WRAPPER = "import base64;exec(base64.b64decode('%s'))"
_record = []
_source = []


def command(python, expected, bundle, folder, args, source=None):
    """The argv that runs `bundle` with `args` through the launcher (the app builds the same one)."""
    import base64
    text = (source if source is not None else own_source()) + LAUNCH_CALL
    code = WRAPPER % base64.b64encode(text.encode("utf-8")).decode("ascii")
    return [*python, "-c", code, expected, bundle, folder or "", *args]


def own_source():
    """This file's text, read once (at the agent's start, from the bundle the launcher just verified)."""
    if not _source:
        _source.append(__loader__.get_source(__name__))
    return _source[0]


def take_record():
    """How this process was launched ({sha256, bundle, folder}) or None; taken out of the environment so
    that nothing the agent starts inherits it. The launcher's own text is read now, while it is the one
    just verified."""
    if not _record:
        raw = os.environ.pop(RECORD_ENV, None)
        rec = None
        if raw:
            import json

            try:
                rec = json.loads(raw)
                if not (isinstance(rec, dict) and all(isinstance(rec.get(k), str) for k in ("sha256", "bundle"))):
                    rec = None
            except ValueError:
                rec = None
        if rec is not None:
            own_source()
        _record.append(rec)
    return _record[0]


def relaunch_entry(record, expected=None):
    """The argv prefix that starts the agent again through the launcher (args follow)."""
    return command([sys.executable], expected or record["sha256"], record["bundle"], record.get("folder", ""), [])
