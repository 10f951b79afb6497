"""Host and user names as OpenSSH's client refuses them, before they reach a shell.

A host's address (or its name, when that is the SSH alias) and its user end up in ssh_config tokens (`%h`,
`%r`) that `Match exec` and `ProxyCommand` hand to `/bin/sh -c`. OpenSSH's client refuses a typed host or
user that could change such a command ("hostname contains invalid characters"); the app refuses the same
names, on every face, before any token expands. The rules are one table, `SSH_NAME_RULES`, one row per kind
of name; `ssh -G` is the oracle the tests hold them to (docs/security.md, "Host and user names").

The character classes are C's in the "C" locale (what OpenSSH's `isspace`/`iscntrl` see of each byte): a
non-ASCII letter is allowed, as it is by ssh.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

C_SPACE = frozenset(" \t\n\v\f\r")
"""What C's isspace() is true for in the "C" locale."""


def _c_control(ch: str) -> bool:
    return ord(ch) < 0x20 or ord(ch) == 0x7F


class SshNameKind(StrEnum):
    HOST = "address"
    """A host name or address typed for ssh (the host's address, or its name used as an alias)."""
    USER = "user"
    """The user to log in as."""


@dataclass(frozen=True)
class SshNameRule:
    kind: SshNameKind
    refused: frozenset[str]
    """Characters a shell would read as syntax: never in such a name."""
    any_space: bool
    """Whitespace of any kind is refused (hosts); else only a space before '-' (users: it would start an option)."""
    trailing_backslash: bool
    """A backslash at the end is refused (users: it would escape what a command puts next)."""


SSH_NAME_RULES: dict[SshNameKind, SshNameRule] = {
    SshNameKind.HOST: SshNameRule(SshNameKind.HOST, frozenset("'`\"$\\;&<>|(){},"), any_space=True,
                                  trailing_backslash=False),
    SshNameKind.USER: SshNameRule(SshNameKind.USER, frozenset("'`\";&<>|(){}"), any_space=False,
                                  trailing_backslash=True),
}


def ssh_name_problem(kind: SshNameKind, value: str) -> str | None:
    """Why ssh would refuse `value` as a `kind` of name, in words (None: it is accepted)."""
    rule = SSH_NAME_RULES[kind]
    if value.startswith("-"):
        return "cannot start with '-': programs would take it for an option"
    for index, ch in enumerate(value):
        if _c_control(ch):
            return "cannot contain control characters"
        if ch in rule.refused:
            return f"cannot contain {ch!r}: a shell would read it as syntax"
        if ch in C_SPACE and (rule.any_space or value[index + 1:index + 2] == "-"):
            return "cannot contain spaces" if rule.any_space else "cannot have '-' after a space"
    if rule.trailing_backslash and value.endswith("\\"):
        return "cannot end with a backslash"
    if kind is SshNameKind.HOST and value.rfind("@") == 0:
        # ssh splits a destination at its last '@' into user and host, and refuses an empty user (its usage).
        return "cannot start with its only '@': ssh would read an empty user before it"
    return None


def ssh_accepts(kind: SshNameKind, value: str) -> bool:
    return ssh_name_problem(kind, value) is None
