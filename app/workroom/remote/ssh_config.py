"""Where an SSH target really is: ~/.ssh/config resolved the way `ssh` would, for paramiko.

paramiko does not read ~/.ssh/config by itself; users expect `workroom connect mybox` to reach the
same machine as `ssh mybox`. This module turns an alias plus command-line style overrides into a
plain `SshTarget` (HostName, User, Port, IdentityFile list, ProxyJump chain). No network here.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import paramiko

from workroom.core.errors import UserError

DEFAULT_PORT = 22
# Same order OpenSSH tries when no IdentityFile is configured (only the ones that exist are used).
DEFAULT_IDENTITY_NAMES = ("id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk")
MAX_JUMP_DEPTH = 4


class SshConfigError(UserError):
    """The SSH configuration for a target cannot be used (bad value, a ProxyJump loop...)."""

    def __init__(self, message: str, hint: str = "Check ~/.ssh/config for this host.") -> None:
        super().__init__("SSH configuration problem", message, hint)


@dataclass(frozen=True)
class SshTarget:
    """One SSH endpoint after ~/.ssh/config: everything needed to open a connection to it.

    `alias` is what the user typed (kept for messages); `hostname` is what we dial and the name host
    keys are recorded under. `proxy_jump` is the hop to go through first (itself a target, possibly
    with its own hop). `proxy_command` is the raw ProxyCommand with tokens already expanded.
    """

    alias: str
    hostname: str
    port: int = DEFAULT_PORT
    user: str = field(default_factory=getpass.getuser)
    identity_files: tuple[Path, ...] = ()
    identities_only: bool = False
    proxy_jump: SshTarget | None = None
    proxy_command: str | None = None

    def describe(self) -> str:
        """`user@host:port` (and the alias when it differs) for messages."""
        where = f"{self.user}@{self.hostname}:{self.port}"
        return where if self.alias == self.hostname else f"{self.alias} ({where})"


def default_config_path() -> Path:
    return Path.home() / ".ssh" / "config"


def load_config(config_path: Path | None = None) -> paramiko.SSHConfig:
    """Parse an ssh_config file; a missing file is an empty config, an unreadable one a clear error."""
    path = config_path if config_path is not None else default_config_path()
    if not path.exists():
        return paramiko.SSHConfig()
    try:
        return paramiko.SSHConfig.from_path(str(path))
    except (OSError, UnicodeDecodeError, ValueError, paramiko.ConfigParseError) as exc:
        raise SshConfigError(f"Could not read {path}: {exc}.",
                             "Fix the file or move it aside, then try again.") from exc


def resolve_target(
    target: str,
    *,
    port: int | None = None,
    user: str | None = None,
    identity: Path | str | None = None,
    config_path: Path | None = None,
    default_identities: Sequence[Path] | None = None,
) -> SshTarget:
    """Resolve `target` ("alias", "host" or "user@host") through the SSH config.

    Explicit `port`, `user` and `identity` win over the config, like `ssh -p/-l/-i`; an explicit
    identity is tried before the configured ones. `default_identities` (default: ~/.ssh/id_*) is
    used when the config names no IdentityFile. Raises `SshConfigError` for unusable input.
    """
    config = load_config(config_path)
    defaults = list(default_identities) if default_identities is not None else _default_identities()
    return _resolve(config, target, port=port, user=user, identity=identity, defaults=defaults,
                    seen=(), follow_jump=True)


def _default_identities() -> list[Path]:
    ssh_dir = Path.home() / ".ssh"
    return [ssh_dir / name for name in DEFAULT_IDENTITY_NAMES]


def _split_user(target: str) -> tuple[str | None, str]:
    if "@" in target:
        user, _, host = target.rpartition("@")
        return user or None, host
    return None, target


def _parse_port(value: str | int, what: str) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise SshConfigError(f"{what} has port {value!r}, which is not a number.") from None
    if not 0 < port < 65536:
        raise SshConfigError(f"{what} has port {port}, outside 1–65535.")
    return port


def _resolve(
    config: paramiko.SSHConfig,
    target: str,
    *,
    port: int | None,
    user: str | None,
    identity: Path | str | None,
    defaults: list[Path],
    seen: tuple[str, ...],
    follow_jump: bool,
) -> SshTarget:
    target = target.strip()
    typed_user, alias = _split_user(target)
    if not alias or any(c.isspace() for c in alias):
        raise SshConfigError(f"{target!r} is not a host name or SSH alias.",
                             "Use a name such as mybox or user@example.com.")
    if alias in seen or len(seen) > MAX_JUMP_DEPTH:
        chain = " -> ".join((*seen, alias))
        raise SshConfigError(f"ProxyJump goes round in a loop or too deep: {chain}.")
    entry = config.lookup(alias)

    hostname = str(entry.get("hostname", alias))
    resolved_port = _parse_port(port if port is not None else entry.get("port", DEFAULT_PORT), alias)
    resolved_user = user or typed_user or entry.get("user") or getpass.getuser()

    files: list[Path] = []
    if identity is not None:
        files.append(Path(os.path.expanduser(str(identity))))
    configured = [Path(os.path.expanduser(p)) for p in entry.get("identityfile", [])]
    files.extend(configured)
    if not configured:
        files.extend(defaults)
    identities = tuple(dict.fromkeys(files))  # de-duplicated, order kept

    jump: SshTarget | None = None
    raw_jump = str(entry.get("proxyjump", "")).strip()
    if follow_jump and raw_jump and raw_jump.lower() != "none":
        jump = _resolve_jump_chain(config, raw_jump, defaults=defaults, seen=(*seen, alias))
    proxy_command = entry.get("proxycommand")
    if proxy_command is not None and proxy_command.strip().lower() == "none":
        proxy_command = None
    if jump is not None:
        proxy_command = None  # OpenSSH: the first of ProxyJump / ProxyCommand wins; we prefer the jump

    return SshTarget(
        alias=alias,
        hostname=hostname,
        port=resolved_port,
        user=str(resolved_user),
        identity_files=identities,
        identities_only=str(entry.get("identitiesonly", "no")).lower() == "yes",
        proxy_jump=jump,
        proxy_command=proxy_command,
    )


def _resolve_jump_chain(
    config: paramiko.SSHConfig, raw: str, *, defaults: list[Path], seen: tuple[str, ...]
) -> SshTarget:
    """ProxyJump "a,b" means: reach a, through it reach b, through b reach the target."""
    hops = [h.strip() for h in raw.split(",") if h.strip()]
    previous: SshTarget | None = None
    for index, hop in enumerate(hops):
        hop_user, hop_rest = _split_user(hop)
        hop_host, hop_port = _split_hop_port(hop_rest, hop)
        # A single hop keeps its own ProxyJump (ssh -J resolves it as an alias); in a list it does not.
        resolved = _resolve(config, hop_host, port=hop_port, user=hop_user, identity=None,
                            defaults=defaults, seen=(*seen, *hops[:index]), follow_jump=len(hops) == 1)
        if previous is not None:
            resolved = _with_jump(resolved, previous)
        previous = resolved
    if previous is None:
        raise SshConfigError(f"ProxyJump {raw!r} names no host.")
    return previous


def _split_hop_port(rest: str, hop: str) -> tuple[str, int | None]:
    if rest.startswith("["):  # [v6addr]:port
        host, _, tail = rest[1:].partition("]")
        return host, _parse_port(tail[1:], hop) if tail.startswith(":") else None
    if rest.count(":") == 1:
        host, _, port = rest.partition(":")
        return host, _parse_port(port, hop)
    return rest, None


def _with_jump(target: SshTarget, jump: SshTarget) -> SshTarget:
    return replace(target, proxy_jump=jump, proxy_command=None)
