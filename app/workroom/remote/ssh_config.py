"""Where an SSH target really is: ~/.ssh/config resolved the way `ssh` would, for paramiko.

paramiko does not read ~/.ssh/config by itself; users expect `workroom connect mybox` to reach the
same machine as `ssh mybox`. This module turns an alias plus command-line style overrides into a
plain `SshTarget` (HostName, User, Port, identities, agent, ProxyJump chain, known-hosts files), reading
the files with `ssh_config_file` (OpenSSH's rules: Include, Match, first value wins). No network here.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workroom.core.errors import UserError
from workroom.core.hosts import UnsafeHostNameError
from workroom.core.ssh_names import SshNameKind, ssh_name_problem
from workroom.remote.ssh_config_file import (
    ConfigReader,
    HostOptions,
    LookupContext,
    SshConfigFileError,
    expand_tokens,
    lookup,
    shell_exec_matcher,
)

DEFAULT_PORT = 22
# Same order OpenSSH tries when no IdentityFile is configured (only the ones that exist are used).
# OpenSSH also lists id_xmss and id_dsa; paramiko reads neither (see docs/providers.md).
DEFAULT_IDENTITY_NAMES = ("id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk")
DEFAULT_USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
SYSTEM_CONFIG = Path("/etc/ssh/ssh_config")
MAX_JUMP_DEPTH = 4


class SshConfigError(UserError):
    """The SSH configuration for a target cannot be used (bad value, a ProxyJump loop...)."""

    def __init__(self, message: str, hint: str = "Check ~/.ssh/config for this host.") -> None:
        super().__init__("SSH configuration problem", message, hint)


@dataclass(frozen=True)
class SshTarget:
    """One SSH endpoint after ~/.ssh/config: everything needed to open a connection to it.

    `alias` is what the user typed (kept for messages); `hostname` is what we dial and the name host
    keys are recorded under (unless `host_key_alias` is set). `proxy_jump` is the hop to go through
    first (itself a target, possibly with its own hop). `proxy_command` is the raw ProxyCommand with
    tokens already expanded. `identity_agent` is the agent socket to use (None: no agent).
    """

    alias: str
    hostname: str
    port: int = DEFAULT_PORT
    user: str = field(default_factory=getpass.getuser)
    identity_files: tuple[Path, ...] = ()
    identities_only: bool = False
    proxy_jump: SshTarget | None = None
    proxy_command: str | None = None
    certificate_files: tuple[Path, ...] = ()
    identity_agent: str | None = field(default_factory=lambda: os.environ.get("SSH_AUTH_SOCK") or None)
    user_known_hosts_files: tuple[Path, ...] = ()
    global_known_hosts_files: tuple[Path, ...] = ()
    host_key_alias: str | None = None
    check_host_ip: bool = False
    kex_algorithms: str | None = None
    proxy_use_fdpass: bool = False  # the ProxyCommand hands back a connected socket (OrbStack does this)

    def describe(self) -> str:
        """`user@host:port` (and the alias when it differs) for messages."""
        where = f"{self.user}@{self.hostname}:{self.port}"
        return where if self.alias == self.hostname else f"{self.alias} ({where})"


@dataclass(frozen=True)
class _Local:
    """The local side's facts that tokens and Match criteria use (a test may stand in another user)."""

    home: Path
    user: str
    uid: int
    environ: Mapping[str, str]
    files: tuple[tuple[Path, bool], ...]


def resolve_target(
    target: str,
    *,
    port: int | None = None,
    user: str | None = None,
    identity: Path | str | None = None,
    config_path: Path | None = None,
    default_identities: Sequence[Path] | None = None,
    home: Path | None = None,
    local_user: str | None = None,
    local_uid: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> SshTarget:
    """Resolve `target` ("alias", "host" or "user@host") through the SSH config.

    Explicit `port`, `user` and `identity` win over the config, like `ssh -p/-l/-i`; an explicit
    identity is tried before the configured ones. `default_identities` (default: ~/.ssh/id_*) is
    used when the config names no IdentityFile. Without `config_path` the user's ~/.ssh/config and
    then /etc/ssh/ssh_config are read, as `ssh` does; with it only that file (like `ssh -F`).
    `home`, `local_user`, `local_uid` and `environ` default to this process's. Raises `SshConfigError`.
    """
    home_dir = home if home is not None else Path.home()
    if config_path is None:
        files: tuple[tuple[Path, bool], ...] = ((home_dir / ".ssh" / "config", True), (SYSTEM_CONFIG, False))
    else:
        files = ((config_path, True),)
    local = _Local(home=home_dir, user=local_user or getpass.getuser(),
                   uid=os.getuid() if local_uid is None else local_uid,
                   environ=environ if environ is not None else os.environ, files=files)
    defaults = list(default_identities) if default_identities is not None else [
        home_dir / ".ssh" / name for name in DEFAULT_IDENTITY_NAMES]
    try:
        return _resolve(local, target, port=port, user=user, identity=identity, defaults=defaults,
                        seen=(), jump_override=None)
    except SshConfigFileError as exc:
        raise SshConfigError(exc.message, exc.hint) from exc


def refuse_unsafe_names(host: str, user: str | None) -> None:
    """UnsafeHostNameError for a host or user that ssh itself refuses on its command line (core.ssh_names):
    `Match exec` and `ProxyCommand` run through a shell with them in `%h`, `%n` and `%r`. A hosts file edited by
    hand reaches this too: the check when a host is added is not the only one."""
    for what, kind, value in (("address", SshNameKind.HOST, host), ("user", SshNameKind.USER, user)):
        why = ssh_name_problem(kind, value) if value is not None else None
        if value is not None and why is not None:
            raise UnsafeHostNameError(what, value, why)


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


def _local_hostname() -> tuple[str, str]:
    full = socket.gethostname()
    return full, full.split(".", 1)[0]


def _tokens(local: _Local, *, original: str, hostname: str, port: int, user: str,
            host_key_alias: str | None, jump: str) -> dict[str, str]:
    """OpenSSH's tokens for IdentityFile, CertificateFile, IdentityAgent, UserKnownHostsFile..."""
    long_name, short_name = _local_hostname()
    # %C as OpenSSH 9.2 computes it (later releases add the ProxyJump to the hash).
    connection_hash = hashlib.sha1(f"{long_name}{hostname}{port}{user}".encode()).hexdigest()
    return {
        "C": connection_hash, "d": str(local.home), "h": hostname, "i": str(local.uid),
        "j": jump, "k": host_key_alias or original, "L": short_name, "l": long_name,
        "n": original, "p": str(port), "r": user, "u": local.user,
    }


_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _expand_path(raw: str, local: _Local, tokens: dict[str, str]) -> str:
    """`~`, `${VAR}` and %-tokens, as ssh expands IdentityFile and friends."""
    def env(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in local.environ:
            raise SshConfigError(f"{raw!r} uses ${{{name}}}, which is not set.")
        return local.environ[name]

    text = _ENV_VAR.sub(env, raw)
    if text == "~" or text.startswith("~/"):
        text = str(local.home) + text[1:]
    elif text.startswith("~"):
        text = os.path.expanduser(text)
    return expand_tokens(text, tokens)


def _options(local: _Local, alias: str, typed_user: str | None) -> HostOptions:
    def exec_tokens(reader: ConfigReader) -> dict[str, str]:
        port = reader.options.first("port") or str(DEFAULT_PORT)
        return _tokens(local, original=alias.lower(), hostname=reader.match_host(), port=int(port)
                       if port.isdigit() else DEFAULT_PORT, user=reader.current_user(),
                       host_key_alias=reader.options.first("hostkeyalias"),
                       jump=reader.options.first("proxyjump") or "")

    context = LookupContext(original_host=alias, typed_user=typed_user, local_user=local.user, home=local.home)
    return lookup(context, list(local.files), run_exec=shell_exec_matcher(exec_tokens))


def _resolve(
    local: _Local,
    target: str,
    *,
    port: int | None,
    user: str | None,
    identity: Path | str | None,
    defaults: list[Path],
    seen: tuple[str, ...],
    jump_override: SshTarget | None,
) -> SshTarget:
    typed_user, alias = _split_user(target)  # not stripped: ssh refuses "box " too, and so does this
    if not alias or any(c.isspace() for c in alias):
        raise SshConfigError(f"{target!r} is not a host name or SSH alias.",
                             "Use a name such as mybox or user@example.com.")
    refuse_unsafe_names(alias, user or typed_user)  # before ~/.ssh/config is read: its Match exec expands %h, %r
    if alias in seen or len(seen) > MAX_JUMP_DEPTH:
        chain = " -> ".join((*seen, alias))
        raise SshConfigError(f"ProxyJump goes round in a loop or too deep: {chain}.")
    given_user = user or typed_user
    entry = _options(local, alias, given_user)
    host = alias.lower()

    hostname = entry.first("hostname") or host  # always set: the lookup resolves and lower-cases it
    resolved_port = _parse_port(port if port is not None else entry.first("port") or DEFAULT_PORT, alias)
    resolved_user = given_user or entry.first("user") or local.user
    host_key_alias = entry.first("hostkeyalias")
    raw_jump = (entry.first("proxyjump") or "").strip()
    if jump_override is not None:
        raw_jump = ""
    tokens = _tokens(local, original=host, hostname=hostname, port=resolved_port, user=resolved_user,
                     host_key_alias=host_key_alias, jump=raw_jump if raw_jump.lower() != "none" else "")

    files: list[Path] = []
    if identity is not None:
        files.append(Path(os.path.expanduser(str(identity))))
    named = entry.many("identityfile")
    configured = [Path(_expand_path(p, local, tokens)) for p in named if p.lower() != "none"]
    files.extend(configured)
    if not named:  # "IdentityFile none" means no key files at all, not the defaults
        files.extend(defaults)
    identities = tuple(dict.fromkeys(files))  # de-duplicated, order kept
    certificates = tuple(dict.fromkeys(Path(_expand_path(p, local, tokens)) for p in entry.many("certificatefile")
                                       if p.lower() != "none"))

    jump: SshTarget | None = jump_override
    proxy_command: str | None = None
    raw_command = entry.first("proxycommand")
    if jump is None and raw_jump and raw_jump.lower() != "none":
        jump = _resolve_jump_chain(local, raw_jump, defaults=defaults, seen=(*seen, alias))
    elif jump is None and raw_command is not None and raw_command.strip().lower() != "none":
        proxy_command = expand_tokens(raw_command, {"h": hostname, "n": host, "p": str(resolved_port),
                                                    "r": resolved_user, "k": host_key_alias or host})

    return SshTarget(
        alias=alias,
        hostname=hostname,
        port=resolved_port,
        user=str(resolved_user),
        identity_files=identities,
        identities_only=(entry.first("identitiesonly") or "no").lower() == "yes",
        proxy_jump=jump,
        proxy_command=proxy_command,
        certificate_files=certificates,
        identity_agent=_identity_agent(entry.first("identityagent"), local, tokens),
        user_known_hosts_files=_known_hosts(entry.args("userknownhostsfile"), DEFAULT_USER_KNOWN_HOSTS,
                                            local, tokens),
        global_known_hosts_files=_known_hosts(entry.args("globalknownhostsfile"), DEFAULT_GLOBAL_KNOWN_HOSTS,
                                              local, tokens),
        host_key_alias=host_key_alias,
        check_host_ip=(entry.first("checkhostip") or "no").lower() == "yes",
        kex_algorithms=entry.first("kexalgorithms"),
        proxy_use_fdpass=(entry.first("proxyusefdpass") or "no").lower() == "yes",
    )


def _identity_agent(raw: str | None, local: _Local, tokens: dict[str, str]) -> str | None:
    """IdentityAgent: a socket path (`~`, %d, ${VAR}), SSH_AUTH_SOCK (the environment's), or none."""
    if raw is None or raw == "SSH_AUTH_SOCK":
        return local.environ.get("SSH_AUTH_SOCK") or None
    if raw.lower() == "none":
        return None
    if raw.startswith("$") and not raw.startswith("${"):
        return local.environ.get(raw[1:]) or None
    return _expand_path(raw, local, tokens)


def _known_hosts(args: list[str] | None, defaults: tuple[str, ...], local: _Local,
                 tokens: dict[str, str]) -> tuple[Path, ...]:
    chosen = args if args else list(defaults)
    if len(chosen) == 1 and chosen[0].lower() == "none":
        return ()
    return tuple(Path(_expand_path(name, local, tokens)) for name in chosen)


def _resolve_jump_chain(
    local: _Local, raw: str, *, defaults: list[Path], seen: tuple[str, ...]
) -> SshTarget:
    """ProxyJump "a,b" means: reach a, through it reach b, through b reach the target.

    As OpenSSH runs it (`ssh -J a -W target b`): the first hop keeps its own ProxyJump or
    ProxyCommand from the config; every later hop goes through the one before it instead.
    """
    hops = [h.strip() for h in raw.split(",") if h.strip()]
    previous: SshTarget | None = None
    for index, hop in enumerate(hops):
        hop_user, hop_rest = _split_user(hop)
        hop_host, hop_port = _split_hop_port(hop_rest, hop)
        previous = _resolve(local, hop_host, port=hop_port, user=hop_user, identity=None,
                            defaults=defaults, seen=(*seen, *hops[:index]), jump_override=previous)
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
