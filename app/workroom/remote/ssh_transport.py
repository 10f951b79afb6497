"""paramiko's Transport with the key exchange names OpenSSH servers offer, and a plain-words mismatch.

paramiko knows curve25519 only by its pre-standard name `curve25519-sha256@libssh.org`; a server set to
`KexAlgorithms sntrup761x25519-sha512@openssh.com,curve25519-sha256` (RFC 8731's name for the very same
method) then has nothing in common with us. We offer both names. When nothing matches, the error says
what each side offered instead of a traceback.

It also opens OpenSSH's `direct-streamlocal@openssh.com` channel (a stream to a Unix socket on the server, as
`ssh -W /path` and `ssh -L port:/path` use; OpenSSH's PROTOCOL file), which paramiko does not
know: the agent's socket is reached without starting a command on the host (docs/protocol.md, transport).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

import paramiko
from paramiko.common import cMSG_CHANNEL_OPEN
from paramiko.kex_curve25519 import KexCurve25519
from paramiko.message import Message
from paramiko.ssh_exception import IncompatiblePeer

# paramiko logs a failed handshake with its traceback at ERROR; with no logging set up Python would print
# that on stderr. The user gets our plain-words error instead; the app's own log handler still sees it.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

RFC8731_CURVE25519 = "curve25519-sha256"
STREAMLOCAL = "direct-streamlocal@openssh.com"
LIBSSH_CURVE25519 = "curve25519-sha256@libssh.org"

# paramiko's "no acceptable ..." wording -> (what it is in words, the peer's list, our preferences)
_MISMATCH = {
    "kex algorithm": ("key exchange method", "kex_algo_list", "preferred_kex"),
    "host key": ("host key type", "server_key_algo_list", "preferred_keys"),
    "cipher": ("cipher", "server_encrypt_algo_list", "preferred_ciphers"),
    "mac": ("message authentication (MAC) method", "server_mac_algo_list", "preferred_macs"),
    "compression": ("compression method", "server_compress_algo_list", "preferred_compression"),
}


def _with_rfc_name(names: tuple[str, ...]) -> tuple[str, ...]:
    if RFC8731_CURVE25519 in names or LIBSSH_CURVE25519 not in names:
        return names
    at = names.index(LIBSSH_CURVE25519)
    return (*names[:at], RFC8731_CURVE25519, *names[at:])


class WorkroomTransport(paramiko.Transport):
    """A client Transport that also speaks `curve25519-sha256` and remembers the peer's offer."""

    # paramiko's kex tables and KEXINIT parser are private (not in its type stubs).
    _kex_info: ClassVar[dict[str, type]] = {
        **paramiko.Transport._kex_info,  # type: ignore[attr-defined]
        RFC8731_CURVE25519: KexCurve25519,
    }
    _preferred_kex: ClassVar[tuple[str, ...]] = _with_rfc_name(
        tuple(paramiko.Transport._preferred_kex))  # type: ignore[attr-defined]

    peer_offer: dict[str, list[str]] | None = None
    peer_disconnect: tuple[int, str] | None = None  # the server's own "goodbye" (code, reason), if it sent one

    _pending_open = threading.local()  # the socket path of the open this thread is sending, if any

    def open_streamlocal(self, path: str, timeout: float) -> paramiko.Channel:
        """A channel to the Unix socket `path` on the server (as the login user). paramiko builds the
        CHANNEL_OPEN for a kind it does not know with no fields of its own; `_send_user_message` adds this
        kind's: the socket path, then the reserved string and uint32. Raises paramiko.ChannelException when
        the server refuses (forwarding not allowed, no such socket, nobody listening)."""
        pending = self._pending_open
        pending.path = path  # open_channel sends its CHANNEL_OPEN from this thread
        try:
            return self.open_channel(STREAMLOCAL, timeout=timeout)
        finally:
            pending.path = None

    def _send_user_message(self, data: Any) -> None:
        pending = self._pending_open
        path = getattr(pending, "path", None)
        if path is not None and isinstance(data, Message) and _opens(data, STREAMLOCAL):
            pending.path = None
            data.add_string(path)
            data.add_string("")
            data.add_int(0)
        super()._send_user_message(data)  # type: ignore[misc]

    def _parse_disconnect(self, m: Any) -> None:
        # Tells a server that hung up on purpose (e.g. "Too many authentication failures") from a
        # connection that died (sshd killed, box gone); paramiko reports both as a failed login.
        code, reason = m.get_int(), m.get_text()
        self.peer_disconnect = (code, reason)

    def _really_parse_kex_init(self, m: Any, ignore_first_byte: bool = False) -> dict[str, Any]:
        parsed: dict[str, Any] = super()._really_parse_kex_init(m, ignore_first_byte)  # type: ignore[misc]
        if not ignore_first_byte:  # the peer's KEXINIT (ours is re-parsed with the flag set)
            self.peer_offer = {k: list(v) for k, v in parsed.items() if isinstance(v, list)}
        return parsed


def _opens(message: Message, kind: str) -> bool:
    """Whether `message` is a CHANNEL_OPEN of `kind` (byte 90, then the kind as an SSH string)."""
    raw = message.asbytes()
    want = kind.encode()
    return raw[:1] == cMSG_CHANNEL_OPEN and raw[1:5] == len(want).to_bytes(4, "big") and raw[5:5 + len(want)] == want


def algorithm_mismatch(transport: object, exc: BaseException) -> str | None:
    """For paramiko's IncompatiblePeer: a sentence naming what did not match and both sides' lists."""
    if not isinstance(exc, IncompatiblePeer):
        return None
    text = str(exc).lower()
    found = next((fields for needle, fields in _MISMATCH.items() if needle in text), None)
    if found is None:
        return None
    what, peer_field, our_field = found
    offer = getattr(transport, "peer_offer", None) or {}
    theirs = [a for a in offer.get(peer_field, []) if not a.startswith(("ext-info-", "kex-strict-"))]
    ours = list(getattr(transport, our_field, ()) or ())
    return (f"The server and workroom have no {what} in common. The server offers: "
            f"{', '.join(theirs) or 'nothing we could read'}. Workroom offers: {', '.join(ours) or 'nothing'}.")
