"""The agent's key, SOCKET.key (0600): it proves who the agent is (docs/agent.md, "The agent's key"). Carried in
the probe's command: short, stdlib, Python 3.8, and no hashlib or hmac at import (they load OpenSSL)."""

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
    """The key in SOCKET.key if that is a regular file of this user's alone, else None."""
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
    """The key, made (0600) when there is none or it is damaged; two makers at once end with one key."""
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
            os.rename(tmp, path)
        else:
            os.link(tmp, path)
    except FileExistsError:
        pass  # the other maker's stands
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return read_key(sock)


def key_id(key):
    """Names a key without telling it."""
    h = sha256()
    h.update((ID_LABEL + key).encode("ascii"))
    return h.hexdigest()[:32]


def proof_of(key, challenge):
    import hmac  # only the serving agent proves

    return hmac.new(bytes.fromhex(key), PROOF_LABEL + challenge.encode("ascii"), "sha256").hexdigest()
