"""This computer's app settings as stored on disk (the ceiling settings handed to every agent)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workroom.core.ceiling import CeilingSettings


class AppSettings(BaseModel):
    """Everything in settings.json. New fields get defaults so older files still load; fields a newer app
    wrote are kept (and saved again), so going back a version never sets the file aside as damaged."""

    model_config = ConfigDict(frozen=True, extra="allow")

    version: Literal[1] = 1
    ceiling: CeilingSettings = Field(default_factory=CeilingSettings)
    login_item_offered: bool = False
    """The first-run offer to open the app at login was answered (either way): it is not made again."""
    hold_idle_sleep: bool = False
    """macOS: hold off this Mac's idle sleep while it keeps a busy request-metered box awake."""
    terminal_app: str = ""
    """Open in terminal uses this (an app name on macOS, a program elsewhere); empty: this computer's default."""
