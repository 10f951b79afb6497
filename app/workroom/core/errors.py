"""Errors a user sees: a title, one plain sentence, and what to do next.

The app and the CLI show these as they are, so every layer raises (or returns) a `UserError`
instead of a bare exception text. `ErrorInfo` is the same thing as plain data, for models and
events that cross a thread or process boundary.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ErrorInfo(BaseModel):
    """A user-facing error as serialisable data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    message: str
    hint: str = ""

    def text(self) -> str:
        """The whole error as one line (CLI output, tooltips)."""
        parts = [f"{self.title}: {self.message}"]
        if self.hint:
            parts.append(self.hint)
        return " ".join(parts)


class UserError(Exception):
    """An error meant for a person: what happened, in plain words, and what to do next."""

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__(title, message, hint)
        self.title = title
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.info().text()

    def info(self) -> ErrorInfo:
        """The error as data (safe to send across threads or store in a model)."""
        return ErrorInfo(title=self.title, message=self.message, hint=self.hint)
