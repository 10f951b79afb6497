"""Errors a user sees: a title, one plain sentence, and what to do next.

The app and the CLI show these as they are, so every layer raises (or returns) a `UserError`
instead of a bare exception text. `ErrorInfo` is the same thing as plain data, for models and
events that cross a thread or process boundary. Each kind of error carries the `workroom` command's
exit code for it (`UserError.exit_code`), so the CLI decides by type, never by a title's words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import ClassVar

from pydantic import BaseModel, ConfigDict


class ExitCode(IntEnum):
    """The `workroom` command's exit codes (docs/cli.md)."""

    OK = 0
    ERROR = 1
    USAGE = 2
    NO_HOST = 3
    UNREACHABLE = 4
    """The host could not be reached, or the agent could not be installed or reached."""
    HOST_KEY_UNKNOWN = 5
    HOST_KEY_CHANGED = 6
    OUT_OF_RANGE = 7
    NO_KEYRING = 8
    """No usable secure system keyring (none, locked, or failing): nothing is stored (never in plain text)."""
    ASLEEP = 9
    """The box is asleep and the command did not wake it: answered from what is known (`--wake` wakes it)."""


class Face(StrEnum):
    """Where a person reads an error: advice names that face's own controls (a dialog field, a flag)."""

    APP = "app"
    CLI = "cli"


class ErrorKind(StrEnum):
    """What happened, where a face words it its own way (see `ERROR_KINDS`); most errors are OTHER."""

    OTHER = "other"
    LOGIN_REFUSED = "login_refused"
    HOST_KEY_UNKNOWN = "host_key_unknown"


@dataclass(frozen=True)
class ErrorKindSpec:
    """How the faces name one kind of error: the offline badge's label and first sentence (None: the badge says
    Offline as for any error), and the advice per face (a face not listed shows the error's own hint: the remote
    layer words hints for the command line, which prints them as they are). `{name}` in advice is the host's
    name in the app (`ErrorInfo.advice(face, name)`)."""

    label: str | None
    lead: str | None
    advice: dict[Face, str] = field(default_factory=dict)


ERROR_KINDS: dict[ErrorKind, ErrorKindSpec] = {
    ErrorKind.LOGIN_REFUSED: ErrorKindSpec(
        "Login refused", "The host refused the login.",
        {Face.APP: "Check the user name, that your public key is in ~/.ssh/authorized_keys on the host, and which "
                   "key to use: the Key file field in Edit host…, or IdentityFile in ~/.ssh/config."}),
    ErrorKind.HOST_KEY_UNKNOWN: ErrorKindSpec(
        None, None,
        {Face.CLI: "Compare it with the host's own fingerprint (ssh-keygen -lf on the host's key); if they match, "
                   "`workroom connect {name} --trust-new-host-key` trusts it and connects."}),
}


class ErrorInfo(BaseModel):
    """A user-facing error as serialisable data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    message: str
    hint: str = ""
    kind: ErrorKind = ErrorKind.OTHER

    def advice(self, face: Face, name: str = "NAME") -> str:
        """What to do next, in the words of `face` (the hint, unless this kind has advice of its own there);
        `name`: the host's name in the app, where the advice names a command."""
        spec = ERROR_KINDS.get(self.kind)
        if spec is None or face not in spec.advice:
            return self.hint
        return spec.advice[face].replace("{name}", name)

    def text(self, face: Face = Face.CLI, name: str = "NAME") -> str:
        """The whole error as one line (CLI output, logs, tooltips), with the advice for `face`."""
        parts = [f"{self.title}: {self.message}"]
        hint = self.advice(face, name)
        if hint:
            parts.append(hint)
        return " ".join(parts)


class UserError(Exception):
    """An error meant for a person: what happened, in plain words, and what to do next."""

    exit_code: ClassVar[ExitCode] = ExitCode.UNREACHABLE
    """Most errors a person meets come from reaching a host or its agent; other kinds say their own."""
    error_kind: ClassVar[ErrorKind] = ErrorKind.OTHER
    """What happened, for faces that word it their own way (`ERROR_KINDS`)."""
    retryable: bool = True
    """Whether trying again later, with nothing changed by a person, can help. A connection that broke can
    heal; a host without Python, or a refused login, cannot: a session stops there (and never keeps
    knocking on a box that could otherwise sleep)."""

    app_hint: str = ""
    """`hint` in the desktop app's words where they differ (see ErrorInfo.app_hint)."""

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__(title, message, hint)
        self.title = title
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.info().text()

    def info(self) -> ErrorInfo:
        """The error as data (safe to send across threads or store in a model)."""
        return ErrorInfo(title=self.title, message=self.message, hint=self.hint, kind=self.error_kind)

    def advice(self, face: Face, name: str = "NAME") -> str:
        return self.info().advice(face, name)


class BoxAsleep(UserError):
    """The box is asleep and the command may not wake it: an answer from what is known, not a failure."""

    exit_code = ExitCode.ASLEEP
    facts: dict[str, object] | None = None
    """What the answer says, as data, for a face that gives it so (the command line's `--json`)."""
