"""The agent's key: what lets it prove to the app that it is the agent the app installed, on every link (docs/
security.md, "The agent proves who it is"). The build hash says which code answers, and anyone can repeat it;
the key is 32 random bytes in `SOCKET.key` (hex, mode 0600) in the agent's private state folder, which only the
login user (and root) can read. The app holds a copy in its keyring, taken from the install probe's answer over
SSH (the login user's own channel), and sends a fresh challenge with its `subscribe`; the agent answers with
HMAC-SHA256(key, "wr-agent proof 1" NUL challenge). The key proves the agent and nothing else: it opens nothing,
and it goes with the agent's files at an uninstall.

Carried in the probe's command (remote/host_python.py): standard library only, Python 3.8, short, and no
`hashlib` or `hmac` at import (they load OpenSSL; the probe's reconnect path avoids it).
"""

import os
import stat

from wr_agent.launcher import sha256

KEY_SUFFIX = ".key"
KEY_HEX = 64
PROOF_LABEL = b"wr-agent proof 1\0"
ID_LABEL = "wr-agent key id\0"


def is_hex(text, length=KEY_HEX):
    return isinstance(text, str) and len(text) == length and all(c in "0123456789abcdef" for c in text)


def read_key(sock):
    """The key in `SOCKET.key` if it is a regular file of this user's alone holding one, else None."""
    try:
        fd = os.open(sock + KEY_SUFFIX, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        key = os.read(fd, KEY_HEX + 2).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    return key if is_hex(key) else None


def agent_key(sock):
    """The agent's key, made now (0600, in the socket's folder, which must exist) when there is none or it is
    damaged. Two makers at once (the probe and the agent) end with one key: a new one is linked in only where
    none is, and what is there afterwards is what both return."""
    key = read_key(sock)
    if key is not None:
        return key
    path, tmp = sock + KEY_SUFFIX, "%s%s.tmp.%d" % (sock, KEY_SUFFIX, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, (os.urandom(KEY_HEX // 2).hex() + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if os.path.lexists(path):
            os.rename(tmp, path)  # damaged or not ours alone: replaced
        else:
            os.link(tmp, path)
    except FileExistsError:
        pass  # made meanwhile by the other maker: theirs stands
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return read_key(sock)


def key_id(key):
    """Names a key without telling it (the app sends its key's id to the probe, which answers with the key only
    when the agent's differs)."""
    h = sha256()
    h.update((ID_LABEL + key).encode("ascii"))
    return h.hexdigest()[:32]


def proof_of(key, challenge):
    """The proof that answers `challenge` (hex) with `key` (hex)."""
    import hmac  # here, not at import: only the serving agent proves

    return hmac.new(bytes.fromhex(key), PROOF_LABEL + challenge.encode("ascii"), "sha256").hexdigest()
