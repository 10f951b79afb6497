"""Host key checking: the app's own known_hosts, the user's read-only, and never an automatic yes.

A key is accepted only if a known_hosts entry for that host and port holds exactly that key, or the
host presents a certificate signed by a CA that an `@cert-authority` line trusts for it. A key
never seen before is a question (`UnknownHostKey`) for the UI or CLI to put to the user, who may then
`trust` it; a key that differs from what is on record is refused (`ChangedHostKey`) and never
becomes a question, because that is what an interception looks like. The user's ~/.ssh/known_hosts
is read, with every file their ssh_config names (UserKnownHostsFile, GlobalKnownHostsFile), so hosts
they already use are known; only the app-owned file is ever written.
"""

from __future__ import annotations

import base64
import binascii
import errno
import fcntl
import hashlib
import hmac
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workroom.core.errors import ErrorKind, ExitCode, UserError
from workroom.core.questions import HostKeyQuestion
from workroom.regular_file import NotARegularFileError, read_regular_file
from workroom.storage import atomic_write_bytes

if TYPE_CHECKING:  # paramiko loads with the first SSH connection (docs/architecture.md, start-up)
    import paramiko

HASHED_PREFIX = "|1|"
MAX_KNOWN_HOSTS_BYTES = 64 * 1024 * 1024
"""Far beyond any real known_hosts (a line is ~100 bytes); a larger file is not read, never rewritten."""
USER_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
"""Read from the home of the run that makes a `KnownHosts`."""
RSA_SIGNATURE_TYPES = ("rsa-sha2-512", "rsa-sha2-256")
CERT_SUFFIX = "-cert-v01@openssh.com"
HOST_CERT_TYPES = tuple(t + CERT_SUFFIX for t in ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                                                   "ecdsa-sha2-nistp521", "rsa-sha2-512", "rsa-sha2-256"))
SSH_CERT_TYPE_HOST = 2
# How many public-key fields follow the nonce in a certificate, per key type (PROTOCOL.certkeys).
CERT_KEY_FIELDS = {"ssh-ed25519": 1, "ecdsa-sha2-nistp256": 2, "ecdsa-sha2-nistp384": 2,
                   "ecdsa-sha2-nistp521": 2, "ssh-rsa": 2}


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's SHA256 fingerprint of a public key: `SHA256:` + unpadded base64 (as `ssh-keygen -l`)."""
    return fingerprint_of_blob(key.asbytes())


def fingerprint_of_blob(blob: bytes) -> str:
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def host_key_name(host: str, port: int) -> str:
    """The name OpenSSH files a host's key under: `host` on port 22, else `[host]:port`."""
    return host if port == 22 else f"[{host}]:{port}"


def _display_type(key_type: str) -> str:
    """`ssh-ed25519` -> `ED25519`, `ecdsa-sha2-nistp256` -> `ECDSA`, as ssh prints them."""
    if key_type.startswith("ecdsa-"):
        return "ECDSA"
    return key_type.removeprefix("ssh-").upper()


# --- verdicts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownHostKey:
    """The presented key is on record for this host and port (found in `source`)."""

    host: str
    port: int
    key_type: str
    fingerprint: str
    source: Path


@dataclass(frozen=True)
class UnknownHostKey(HostKeyQuestion):
    """A question (core.questions.HostKeyQuestion): nothing is on record for this host and port; does the
    user trust this key?

    Carries the key itself so that answering yes is `KnownHosts.trust_answer(question)`.
    """

    key: paramiko.PKey

    def prompt(self) -> str:
        """The question in the words ssh uses."""
        return (f"The authenticity of host {host_key_name(self.host, self.port)} can't be established. "
                f"{_display_type(self.key_type)} key fingerprint is {self.fingerprint}. "
                "Trust this key and connect?")


@dataclass(frozen=True)
class ChangedHostKey:
    """Refused: the host presented a key other than the one(s) on record (or a revoked key)."""

    host: str
    port: int
    key_type: str
    presented_fingerprint: str
    expected_fingerprints: tuple[str, ...]
    sources: tuple[Path, ...]
    revoked: bool = False
    certificate: bool = False  # the host showed a certificate; `expected_fingerprints` are its trusted CAs


HostKeyVerdict = KnownHostKey | UnknownHostKey | ChangedHostKey


# --- errors -----------------------------------------------------------------------------------


class HostKeyUnknown(UserError):
    """Connecting stopped at a host key nobody has confirmed yet; `.question` is what to ask."""

    exit_code = ExitCode.HOST_KEY_UNKNOWN
    error_kind = ErrorKind.HOST_KEY_UNKNOWN  # the command line names its --trust-new-host-key

    def __init__(self, question: UnknownHostKey) -> None:
        self.question = question
        super().__init__(
            "New host key",
            f"{host_key_name(question.host, question.port)} presented a host key this computer has not "
            f"seen before: {_display_type(question.key_type)} {question.fingerprint}.",
            "Compare it with the host's own fingerprint (ssh-keygen -lf on the host's key) and trust it "
            "only if they match.",
        )


class HostKeyChanged(UserError):
    """Connecting was refused because the host key differs from the one on record."""

    exit_code = ExitCode.HOST_KEY_CHANGED

    def __init__(self, change: ChangedHostKey) -> None:
        self.change = change
        name = host_key_name(change.host, change.port)
        if change.revoked:
            message = (f"{name} presented the host key {change.presented_fingerprint}, which is marked "
                       "as revoked.")
        elif change.certificate:
            message = (f"{name} presented a host certificate for {change.presented_fingerprint} that no trusted "
                       f"authority ({' or '.join(change.expected_fingerprints)}) vouches for: wrong signer, "
                       "not for this name, expired or unreadable.")
        else:
            expected = " or ".join(change.expected_fingerprints)
            message = (f"The host key of {name} has changed: expected {expected}, but the host presented "
                       f"{change.presented_fingerprint}. Someone may be intercepting the connection, or "
                       "the host was rebuilt.")
        if change.sources == (CHANNEL_SOURCE,):
            # A platform box's key, pinned for the box's run (ChannelVouchedKeys): no file holds it.
            message = (f"{name}'s key changed while the platform says it is the same run of the box: expected "
                       f"{' or '.join(change.expected_fingerprints)}, but it presented {change.presented_fingerprint}. "
                       "Someone may be intercepting the connection.")
            hint = ("Do not connect unless you know why it changed. A rebuild or a restart through the platform "
                    "starts a new run, and its key is taken.")
        else:
            files = ", ".join(str(p) for p in change.sources)
            hint = (f"Do not connect unless you know the host was rebuilt; then remove its old key from {files} "
                    f"(for ~/.ssh/known_hosts: ssh-keygen -R '{name}') and connect again.")
        super().__init__("Host key changed", message, hint)


class KnownHostsError(UserError):
    """The app's known_hosts file could not be written."""


# --- known_hosts files ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    patterns: str
    key_type: str
    blob: bytes
    marker: str  # "" | "@revoked" | "@cert-authority"
    source: Path

    def matches(self, name: str) -> bool:
        if self.patterns.startswith(HASHED_PREFIX):
            return _hashed_match(self.patterns, name)
        return _pattern_match(self.patterns, name)


def _hashed_match(field: str, name: str) -> bool:
    """`|1|base64(salt)|base64(HMAC-SHA1(salt, name))`, as HashKnownHosts writes."""
    parts = field.split("|")
    if len(parts) != 4:
        return False
    try:
        salt = base64.b64decode(parts[2], validate=True)
        expected = base64.b64decode(parts[3], validate=True)
    except (binascii.Error, ValueError):
        return False
    actual = hmac.new(salt, name.encode("utf-8"), hashlib.sha1).digest()
    return hmac.compare_digest(actual, expected)


def _pattern_match(field: str, name: str) -> bool:
    """OpenSSH host pattern lists: comma-separated, `*`/`?` wildcards, `!` negates and wins."""
    name = name.lower()
    matched = False
    for raw in field.split(","):
        negated = raw.startswith("!")
        pattern = raw[1:] if negated else raw
        if pattern and _glob(pattern.lower()).fullmatch(name):
            if negated:
                return False
            matched = True
    return matched


def _glob(pattern: str) -> re.Pattern[str]:
    """OpenSSH wildcards are only `*` and `?`; `[` is literal (it is in `[host]:port`)."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern),
                      re.DOTALL)


def _parse_line(line: str, source: Path) -> _Entry | None:
    """One known_hosts line, or None for blanks, comments and lines OpenSSH would skip too."""
    fields = line.split()
    if not fields or fields[0].startswith("#"):
        return None
    marker = ""
    if fields[0].startswith("@"):
        marker, fields = fields[0], fields[1:]
    if len(fields) < 3:
        return None
    patterns, key_type, b64 = fields[0], fields[1], fields[2]
    try:
        blob = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _Entry(patterns, key_type, blob, marker, source)


def _read_entries(path: Path | None) -> list[_Entry]:
    if path is None:
        return []
    try:
        raw = read_regular_file(path, MAX_KNOWN_HOSTS_BYTES)
    except OSError:
        # Missing, unreadable, or a FIFO/device in its place (read non-blocking, never waited on): like a
        # file of garbage lines it holds no key, and the key will simply be a question.
        return []
    if len(raw) > MAX_KNOWN_HOSTS_BYTES:
        return []
    entries = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        entry = _parse_line(line, path)
        if entry is not None:
            entries.append(entry)
    return entries


class KnownHosts:
    """Host keys on record: `app_file` (read and appended by us) and `user_file` (only read).

    `user_file` defaults to ~/.ssh/known_hosts; pass None to ignore it. Files are re-read on every
    check so a key trusted by the CLI is seen by a running app at once.
    """

    def __init__(self, app_file: Path, user_file: Path | None = USER_KNOWN_HOSTS,
                 read_only: Sequence[Path] = ()) -> None:
        self.app_file = Path(app_file)
        self.user_file = Path(user_file).expanduser() if user_file is not None else None
        self.read_only = tuple(Path(p) for p in read_only)
        self._lock = threading.Lock()

    def with_files(self, files: Sequence[Path]) -> KnownHosts:
        """The same records plus more read-only files (a host's UserKnownHostsFile/GlobalKnownHostsFile)."""
        return KnownHosts(self.app_file, self.user_file, (*self.read_only, *files))

    def _all_entries(self) -> list[_Entry]:
        files = list(dict.fromkeys(p for p in (self.user_file, *self.read_only) if p is not None))
        entries: list[_Entry] = []
        for path in files:
            if path != self.app_file:
                entries.extend(_read_entries(path))
        return entries + _read_entries(self.app_file)

    def _entries_for(self, host: str, port: int) -> list[_Entry]:
        name = host_key_name(host, port)
        return [e for e in self._all_entries() if e.marker != "@cert-authority" and e.matches(name)]

    def _authorities_for(self, host: str, port: int) -> list[_Entry]:
        name = host_key_name(host, port)
        return [e for e in self._all_entries() if e.marker == "@cert-authority" and e.matches(name)]

    def known_key_types(self, host: str, port: int) -> list[str]:
        """Key types on record for this host, so the connection can ask the server for one of those.

        With a CA trusted for the host, host certificates come first, as ssh asks for them.
        """
        plain = [e.key_type for e in self._entries_for(host, port) if not e.marker]
        certs = list(HOST_CERT_TYPES) if self._authorities_for(host, port) else []
        return list(dict.fromkeys(certs + plain))

    def verify(self, host: str, port: int, key: paramiko.PKey) -> HostKeyVerdict:
        """Compare the presented key with the records: known, unknown (a question) or changed (refused).

        A host with keys on record only of other types is treated as changed: the connection asks
        for the recorded types first, so a server that no longer offers them has changed its keys.
        """
        blob = key.asbytes()
        key_type = key.get_name()
        presented = fingerprint_of_blob(blob)
        entries = self._entries_for(host, port)
        revoked = [e for e in entries if e.marker == "@revoked" and e.blob == blob]
        certificate = getattr(key, "public_blob", None)
        if not revoked and certificate is not None and certificate.key_type.endswith(CERT_SUFFIX):
            verdict = self._verify_certificate(host, port, key_type, presented, certificate.key_blob, entries)
            if verdict is not None:
                return verdict
        if revoked:
            return ChangedHostKey(host, port, key_type, presented, (),
                                  tuple(dict.fromkeys(e.source for e in revoked)), revoked=True)
        plain = [e for e in entries if not e.marker]
        for entry in plain:
            if entry.blob == blob:
                return KnownHostKey(host, port, key_type, presented, entry.source)
        if plain:
            return ChangedHostKey(
                host, port, key_type, presented,
                tuple(dict.fromkeys(fingerprint_of_blob(e.blob) for e in plain)),
                tuple(dict.fromkeys(e.source for e in plain)),
            )
        return UnknownHostKey(host, port, key_type, presented, key)

    def _verify_certificate(self, host: str, port: int, key_type: str, presented: str, cert_blob: bytes,
                            entries: list[_Entry]) -> HostKeyVerdict | None:
        """A host certificate: known if a trusted, unrevoked CA signed it for this name and it is valid
        now; refused (as changed) if it fails a check; None to judge the plain key instead (no CA)."""
        authorities = self._authorities_for(host, port)
        if not authorities:
            return None
        import paramiko

        try:
            cert = _HostCertificate.parse(cert_blob)
        except (EOFError, IndexError, ValueError, paramiko.SSHException):
            cert = None
        ca_fingerprints = tuple(dict.fromkeys(fingerprint_of_blob(e.blob) for e in authorities))
        sources = tuple(dict.fromkeys(e.source for e in authorities))
        refused = ChangedHostKey(host, port, key_type, presented, ca_fingerprints, sources, certificate=True)
        if cert is None:
            return refused
        if any(e.marker == "@revoked" and e.blob == cert.ca_blob for e in entries):
            return ChangedHostKey(host, port, key_type, presented, ca_fingerprints, sources, revoked=True,
                                  certificate=True)
        trusted = [e for e in authorities if e.blob == cert.ca_blob]
        if not trusted or not cert.valid_for(host) or not cert.signed_by_ca():
            return refused
        return KnownHostKey(host, port, key_type, presented, trusted[0].source)

    def trust(self, host: str, port: int, key: paramiko.PKey) -> None:
        """Record `key` for host:port in the app's file (atomic replace; a no-op if already known).

        Refuses (HostKeyChanged) when a different key is on record: trusting cannot override that.
        """
        if not host or any(c.isspace() or c in ",#[]" for c in host) or host.startswith("|"):
            raise ValueError(f"not a host name: {host!r}")
        with self._lock, self._file_lock():
            verdict = self.verify(host, port, key)
            if isinstance(verdict, KnownHostKey):
                return
            if isinstance(verdict, ChangedHostKey):
                raise HostKeyChanged(verdict)
            line = f"{host_key_name(host, port)} {key.get_name()} {key.get_base64()}\n"
            self._rewrite(lambda old: old + ("" if not old or old.endswith("\n") else "\n") + line)

    def trust_answer(self, question: UnknownHostKey) -> None:
        """The user said yes to `question`."""
        self.trust(question.host, question.port, question.key)

    def forget(self, host: str, port: int) -> int:
        """Remove every entry for host:port from the app's file (after a host was rebuilt).

        Returns how many lines went. The user's own known_hosts is never touched.
        """
        name = host_key_name(host, port)
        removed = 0

        def drop(old: str) -> str:
            nonlocal removed
            kept = []
            for line in old.splitlines(keepends=True):
                entry = _parse_line(line, self.app_file)
                if entry is not None and entry.matches(name):
                    removed += 1
                    continue
                kept.append(line)
            return "".join(kept)

        with self._lock, self._file_lock():
            self._rewrite(drop)
        return removed

    def _file_lock(self) -> _FileLock:
        return _FileLock(self.app_file.with_name(self.app_file.name + ".lock"))

    def _rewrite(self, change: Callable[[str], str]) -> None:
        """Write change(old text) to the app file with storage.atomic_write_bytes: never half-written."""
        try:
            try:
                raw = read_regular_file(self.app_file, MAX_KNOWN_HOSTS_BYTES)
            except FileNotFoundError:
                raw = b""
            if len(raw) > MAX_KNOWN_HOSTS_BYTES:  # rewriting only its start would lose the rest
                raise OSError(errno.EFBIG, f"it is larger than {MAX_KNOWN_HOSTS_BYTES} bytes")
            # Byte for byte: bytes that are not UTF-8 (a hand edit) and any line endings are kept as they were.
            old = raw.decode("utf-8", errors="surrogateescape")
            atomic_write_bytes(self.app_file, change(old).encode("utf-8", errors="surrogateescape"))
        except OSError as exc:
            raise _save_error(self.app_file, exc) from exc


def _save_error(path: Path, exc: OSError) -> KnownHostsError:
    if isinstance(exc, NotARegularFileError):
        return KnownHostsError("Could not save the host key",
                               f"{path} is not a regular file (a pipe or a device is in its place).",
                               "Move it out of the way, then try again.")
    return KnownHostsError("Could not save the host key", f"Writing {path} failed: {exc.strerror or exc}.",
                           "Check that the folder exists and is writable, then try again.")


class _FileLock:
    """An advisory lock shared with other workroom processes (the CLI and the app may both trust)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> _FileLock:
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise _save_error(self.path, exc) from exc
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


# --- host certificates ------------------------------------------------------------------------


@dataclass(frozen=True)
class _HostCertificate:
    """An OpenSSH certificate (PROTOCOL.certkeys), as far as a client checks one."""

    cert_type: int
    principals: tuple[str, ...]
    valid_after: int
    valid_before: int
    ca_blob: bytes
    signed: bytes
    signature: bytes

    @classmethod
    def parse(cls, blob: bytes) -> _HostCertificate:
        import paramiko

        m = paramiko.Message(blob)
        cert_name = m.get_text()
        base = cert_name.removesuffix(CERT_SUFFIX)
        if base not in CERT_KEY_FIELDS:
            raise ValueError(f"unsupported certificate type {cert_name}")
        m.get_string()  # nonce
        for _ in range(CERT_KEY_FIELDS[base]):
            m.get_string()  # an mpint is read the same way here: length + bytes
        m.get_int64()  # serial
        cert_type = m.get_int()
        m.get_string()  # key id
        principals_blob = paramiko.Message(m.get_string())
        principals = []
        while principals_blob.get_remainder():
            principals.append(principals_blob.get_text())
        valid_after, valid_before = m.get_int64(), m.get_int64()
        m.get_string()  # critical options
        m.get_string()  # extensions
        m.get_string()  # reserved
        ca_blob = m.get_string()
        signed = blob[:m.packet.tell()]
        signature = m.get_string()
        return cls(cert_type, tuple(principals), valid_after, valid_before, ca_blob, signed, signature)

    def valid_for(self, host: str) -> bool:
        now = int(time.time())
        in_time = self.valid_after <= now < self.valid_before
        named = not self.principals or host in self.principals
        return self.cert_type == SSH_CERT_TYPE_HOST and in_time and named

    def signed_by_ca(self) -> bool:
        import paramiko

        ca_type = paramiko.Message(self.ca_blob).get_text()
        ca_key = paramiko.PKey.from_type_string(ca_type, self.ca_blob)
        return bool(ca_key.verify_ssh_sig(self.signed, paramiko.Message(self.signature)))


def preferred_key_types(known: list[str], offered: tuple[str, ...] | list[str]) -> list[str]:
    """Put the host key algorithms we hold keys for first, like ssh does, so a known key is presented.

    An `ssh-rsa` record is satisfied by the rsa-sha2 signature algorithms.
    """
    wanted: list[str] = []
    for key_type in known:
        if key_type == "ssh-rsa":
            wanted.extend(t for t in RSA_SIGNATURE_TYPES if t in offered)
        if key_type in offered:
            wanted.append(key_type)
    wanted = list(dict.fromkeys(wanted))
    return wanted + [t for t in offered if t not in wanted]


CHANNEL_SOURCE = Path("<the platform's own authenticated channel>")


class KeyPins:
    """Where a platform box's key is pinned for one run of the box (`ChannelVouchedKeys`): in memory here (tests;
    a run of one process); providers.platform_key_pins keeps them in the state folder, so every face refuses the
    same changed key."""

    def __init__(self) -> None:
        self._pins: dict[str, tuple[str, str]] = {}

    def pin(self, host: str, run: str, presented: str) -> str:
        """The key pinned for `host` in `run`: the one already pinned in that run, else `presented`, now pinned
        (a pin of another run is replaced: a rebuilt box brings a new key)."""
        kept = self._pins.get(host)
        if kept is not None and kept[0] == run:
            return kept[1]
        self._pins[host] = (run, presented)
        return presented

    def forget(self, host: str) -> int:
        """Drop `host`'s pin; how many were dropped."""
        return 1 if self._pins.pop(host, None) is not None else 0


class ChannelVouchedKeys(KnownHosts):
    """Host keys for a box reached only through its platform's own CLI (a Coder workspace, a codespace): the CLI
    authenticated the box over its own channel (the user's platform login, the platform's tunnel to that named
    box), and the box's SSH key changes with every rebuild, so no known_hosts line can hold it and asking the
    user would ask on every rebuild (docs/security.md, "Platform boxes"). Within one run of the box (`run`, the
    platform's own identity of it) the key is pinned (`pins`): another key in the same run is refused as changed.
    Nothing is written to any known_hosts file, and plain SSH hosts never use this."""

    def __init__(self, pins: KeyPins, run: str) -> None:
        super().__init__(CHANNEL_SOURCE, None)
        self._pins = pins
        self._run = run

    def with_files(self, files: Sequence[Path]) -> KnownHosts:
        return self  # a ProxyCommand the app built itself: no ssh_config files apply

    def known_key_types(self, host: str, port: int) -> list[str]:
        return []

    def verify(self, host: str, port: int, key: paramiko.PKey) -> HostKeyVerdict:
        presented = fingerprint_of_blob(key.asbytes())
        pinned = self._pins.pin(host, self._run, presented)
        if pinned != presented:
            return ChangedHostKey(host, port, key.get_name(), presented, (pinned,), (CHANNEL_SOURCE,))
        return KnownHostKey(host, port, key.get_name(), presented, CHANNEL_SOURCE)

    def trust(self, host: str, port: int, key: paramiko.PKey) -> None:
        raise KnownHostsError("Nothing to trust", f"{host}'s key is vouched for by its platform's own channel.",
                              "Nothing needs trusting.")

    def forget(self, host: str, port: int) -> int:
        return self._pins.forget(host)
