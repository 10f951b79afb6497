"""What a host answers the installer's steps with, read as untrusted input: the install probe's answer and the
uninstall's are each checked field by field against one table (`PROBE_FIELDS`, `UNINSTALL_FIELDS`) before
anything acts on them, and their text is cleaned (control and bidi characters become `?`) and cut as it is
read, so what is shown or printed later is plain. A wrong answer (not one JSON object, a field missing or of
the wrong kind) is an `AgentInstallError` in words, never a Python exception (docs/security.md, "what a host
answers"). A field the table does not name is ignored: the steps are the app's own code, carried in its
commands, so no other field is expected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from workroom.core.errors import UserError
from workroom.core.host_text import plain
from workroom.remote.host_shell import ExecResult

MAX_ITEMS = 256
"""The most entries a list in an answer may have (an uninstall names a dozen files)."""


class AgentInstallError(UserError):
    pass


class HostNotSuitable(AgentInstallError):
    """The host cannot run the agent until a person changes it (no or too old Python, an unsafe folder)."""

    retryable = False


_SAFE_PATH = re.compile(r"[^\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]{1,1024}")
_HASH = re.compile(r"[0-9a-f]{64}")


def is_safe_path(value: object) -> bool:
    """A host path this app uses: text of 1 to 1024 characters without control or direction characters."""
    return isinstance(value, str) and _SAFE_PATH.fullmatch(value) is not None


class WrongAnswer(ValueError):
    """A field that is not what its row says (`field` names it, `why` says how, in words)."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"{name} {why}")
        self.field, self.why = name, why


class Kind(Enum):
    """What a field of an answer may hold, and how it is read."""

    TEXT = "text"  # a line of words from the host: cleaned, at most 100 characters
    WORDS = "words"  # a sentence from the host: cleaned, at most 500 characters
    PATH = "path"  # a path the app goes on to use: refused (not cleaned) unless `is_safe_path`
    HASH = "hash"  # a sha256 in hex (64 lowercase hex digits), or a key of that form
    FLAG = "flag"  # true or false, never a number or a string
    TEXTS = "texts"  # a list of at most MAX_ITEMS lines, each cleaned, at most 1024 characters

    def read(self, name: str, value: object) -> Any:
        match self:
            case Kind.TEXT | Kind.WORDS:
                if not isinstance(value, str):
                    raise WrongAnswer(name, f"is {_kind_of(value)}, not words")
                return plain(value, 100 if self is Kind.TEXT else 500)
            case Kind.PATH:
                if not is_safe_path(value):
                    raise WrongAnswer(name, "is not a folder name this app uses (empty, too long, or with "
                                            "control characters)")
                return value
            case Kind.HASH:
                if not (isinstance(value, str) and _HASH.fullmatch(value)):
                    raise WrongAnswer(name, "is not 64 hexadecimal digits")
                return value
            case Kind.FLAG:
                if not isinstance(value, bool):
                    raise WrongAnswer(name, f"is {_kind_of(value)}, not true or false")
                return value
            case Kind.TEXTS:
                if not isinstance(value, list) or len(value) > MAX_ITEMS:
                    raise WrongAnswer(name, f"is {_kind_of(value)}, not a list of at most {MAX_ITEMS} lines")
                if not all(isinstance(item, str) for item in value):
                    raise WrongAnswer(name, "holds something other than words")
                return [plain(item, 1024) for item in value]


def _kind_of(value: object) -> str:
    """What a JSON value is, in words (never the value: it is the host's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "words"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "an object"


@dataclass(frozen=True)
class Field:
    kind: Kind
    required: bool = True
    nullable: bool = False
    default: Any = None


Table = Mapping[str, Field]

PROBE_FIELDS: Table = {
    "python": Field(Kind.TEXT),
    "home": Field(Kind.PATH),
    "bundle": Field(Kind.PATH),
    "socket": Field(Kind.PATH),
    "sha256": Field(Kind.HASH, nullable=True),
    "version": Field(Kind.TEXT, nullable=True),
    "running": Field(Kind.FLAG),
    "systemd_user": Field(Kind.FLAG),
    "launchd": Field(Kind.FLAG),
    "supervisor": Field(Kind.TEXT, nullable=True),
    "repaired": Field(Kind.TEXTS, required=False, default=[]),
    "running_build": Field(Kind.TEXT, required=False, nullable=True),
    "running_stalled": Field(Kind.FLAG, required=False, default=False),
    "running_frozen": Field(Kind.FLAG, required=False, default=False),
    "unsafe": Field(Kind.WORDS, required=False),
    "key": Field(Kind.HASH, required=False, nullable=True),
}
"""The install probe's answer (wr_agent/install_probe.py, `probe`). `key` is there only when the app's key for
the agent is not the agent's: the agent's key (null: it has none and none could be made)."""

UNINSTALL_FIELDS: Table = {
    "stopped": Field(Kind.TEXTS),
    "removed": Field(Kind.TEXTS),
    "problems": Field(Kind.TEXTS),
    "still_running": Field(Kind.FLAG),
}
"""The uninstall's answer (wr_agent/uninstall.py), when its folder could be trusted."""

UNSAFE_FIELDS: Table = {"unsafe": Field(Kind.WORDS)}
"""A host step's answer when the agent's state folder could not be trusted: nothing was done."""


def read_fields(data: Mapping[str, object], table: Table) -> dict[str, Any]:
    """Every field of `table` from `data`, read by its row (WrongAnswer on the first that is not as it says)."""
    out: dict[str, Any] = {}
    for name, row in table.items():
        if name not in data:
            if row.required:
                raise WrongAnswer(name, "is missing")
            out[name] = list(row.default) if isinstance(row.default, list) else row.default
        elif data[name] is None and row.nullable:
            out[name] = None
        else:
            out[name] = row.kind.read(name, data[name])
    return out


def last_json_object(result: ExecResult) -> dict[str, object] | None:
    """The JSON object a host-side step printed as its last line, or None (nothing, not JSON, not an object:
    `0`, `Infinity`, `[1,2,3]`)."""
    try:
        data = json.loads(result.text().strip().splitlines()[-1])
    except (ValueError, IndexError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


@dataclass
class UninstallReport:
    """What an uninstall did on the host (paths as the host spells them, cleaned)."""

    stopped: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def words(self) -> str:
        stopped = ", ".join(self.stopped) if self.stopped else "no agent was running"
        return f"stopped {stopped}; removed {len(self.removed)} file(s)"


UNINSTALL_FAILED = "Could not uninstall the agent"
UNINSTALL_RETRY = "Check that the host's shell works for this user, then try again."


def read_uninstall(result: ExecResult, socket_path: str) -> UninstallReport:
    """The uninstall's answer as a report, or why not as an `AgentInstallError`: read whole and checked before the
    caller acts on it (removes the host), so a wrong answer removes nothing."""
    data = last_json_object(result)
    if data is None:
        raise AgentInstallError(
            UNINSTALL_FAILED, f"The uninstall on the host failed (exit {result.exit_status}): {result.said()}",
            UNINSTALL_RETRY)
    try:
        if "unsafe" in data:
            unsafe = read_fields(data, UNSAFE_FIELDS)["unsafe"]
            raise HostNotSuitable(
                "The agent's folder on the host is not safe",
                f"{unsafe}, so another user could have put their own agent in its place; nothing was stopped or "
                "removed.",
                "Make that folder writable only by the login user on the host, then try again; or remove the host "
                "without uninstalling.")
        fields = read_fields(data, UNINSTALL_FIELDS)
    except WrongAnswer as wrong:
        raise AgentInstallError(
            UNINSTALL_FAILED, f"The host's answer to the uninstall could not be read: {wrong.field} {wrong.why}.",
            UNINSTALL_RETRY) from None
    if fields["still_running"]:
        raise AgentInstallError(
            "The agent is still running",
            f"The agent on the host did not stop ({plain('; '.join(fields['problems']), 500) or 'no reason given'}), "
            "so nothing was removed.",
            f"Stop it on the host (the pid is in {plain(socket_path, 1024)}.lock), then try again.")
    return UninstallReport(stopped=fields["stopped"], removed=fields["removed"], problems=fields["problems"])
