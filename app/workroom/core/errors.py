"""Errors a user sees: a title, one plain sentence, and what to do next.

The app and the CLI show these as they are, so every layer raises (or returns) a `UserError`
instead of a bare exception text. `ErrorInfo` is the same thing as plain data, for models and
events that cross a thread or process boundary. Each kind of error carries the `workroom` command's
exit code for it (`UserError.exit_code`), so the CLI decides by type, never by a title's words.
"""

from __future__ import annotations

from enum import IntEnum
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


class ErrorInfo(BaseModel):
    """A user-facing error as serialisable data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    message: str
    hint: str = ""
    app_hint: str = ""
    """The same advice in the desktop app's own words (its fields, its buttons) where they differ from the
    command line's (`--identity FILE`); empty: `hint` reads right in both."""

    def hint_in_app(self) -> str:
        return self.app_hint or self.hint

    def text(self) -> str:
        """The whole error as one line (CLI output, tooltips)."""
        parts = [f"{self.title}: {self.message}"]
        if self.hint:
            parts.append(self.hint)
        return " ".join(parts)

    def text_in_app(self) -> str:
        """The whole error as one line, with the app's advice."""
        return " ".join(p for p in (f"{self.title}: {self.message}", self.hint_in_app()) if p)


class UserError(Exception):
    """An error meant for a person: what happened, in plain words, and what to do next."""

    exit_code: ClassVar[ExitCode] = ExitCode.UNREACHABLE
    """Most errors a person meets come from reaching a host or its agent; other kinds say their own."""
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
        return ErrorInfo(title=self.title, message=self.message, hint=self.hint, app_hint=self.app_hint)
