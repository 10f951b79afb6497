"""This computer's app settings as stored on disk (the ceiling settings handed to every agent, and which
notifications this computer shows)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workroom.core.ceiling import CeilingSettings

FINISHED_AFTER_MIN_SECONDS = 60.0
FINISHED_AFTER_MAX_SECONDS = 24 * 3600.0


class NoticeSettings(BaseModel):
    """Which notifications this computer shows besides ceiling prompts (docs/ui.md, "Notifications")."""

    model_config = ConfigDict(frozen=True, extra="allow")  # fields a newer app wrote are kept, as AppSettings does

    finished: bool = True
    """Say when a host that was busy at least `finished_after_seconds` goes idle."""
    finished_after_seconds: float = Field(default=600.0, ge=FINISHED_AFTER_MIN_SECONDS,
                                          le=FINISHED_AFTER_MAX_SECONDS, allow_inf_nan=False)
    finished_this_computer: bool = False
    """This computer's own work too (off: the user is sitting at it)."""
    finished_muted_hosts: tuple[str, ...] = ()
    """Hosts the user asked not to hear "finished" about."""
    lost_work: bool = True
    """Say when a box is busy but not kept awake, or fell asleep while its agent said busy."""

    def finished_for(self, name: str, *, this_computer: bool) -> bool:
        """Whether a "finished" notification is wanted for the host called `name`."""
        if not self.finished or name in self.finished_muted_hosts:
            return False
        return self.finished_this_computer if this_computer else True

    def with_finished_for(self, name: str, wanted: bool) -> NoticeSettings:
        """The same settings with `name` muted (wanted=False) or not."""
        muted = tuple(n for n in self.finished_muted_hosts if n != name) + (() if wanted else (name,))
        return self.model_copy(update={"finished_muted_hosts": muted})


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
    notices: NoticeSettings = Field(default_factory=NoticeSettings)
