"""This computer's app settings as stored on disk: the ceiling settings handed to every agent, which
notifications this computer shows, and this computer's own; each a row of core.setting_rows, read and changed
through `AppSettings.value_of` and `AppSettings.with_changes` (only what changed; every other setting, and
every field a newer app wrote, as stored)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field

from workroom.core.ceiling import CeilingSettings
from workroom.core.setting_checks import SettingsError, check_setting
from workroom.core.setting_rows import (
    FINISHED_AFTER_MAX_SECONDS,
    FINISHED_AFTER_MIN_SECONDS,
    SettingRow,
    Store,
    row_named,
)


def _default(name: str) -> Any:
    row = row_named(name)
    assert row is not None, name
    return row.default


class NoticeSettings(BaseModel):
    """Which notifications this computer shows besides ceiling prompts (docs/ui.md, "Notifications")."""

    model_config = ConfigDict(frozen=True, extra="allow")  # fields a newer app wrote are kept, as AppSettings does

    finished: bool = _default("finished")
    """Say when a host that was busy at least `finished_after_seconds` goes idle."""
    finished_after_seconds: float = Field(default=_default("finished_after_seconds"), ge=FINISHED_AFTER_MIN_SECONDS,
                                          le=FINISHED_AFTER_MAX_SECONDS, allow_inf_nan=False)
    finished_this_computer: bool = _default("finished_this_computer")
    """This computer's own work too (off: the user is sitting at it)."""
    finished_muted_hosts: tuple[str, ...] = ()
    """Hosts the user asked not to hear "finished" about (each host's details; not a row)."""
    lost_work: bool = _default("lost_work")
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

    def onto(self, before: NoticeSettings, stored: NoticeSettings) -> NoticeSettings:
        """What a person changed from `before` to these, applied to `stored` (the file's, maybe another
        process's): only the fields and the hosts' mutes they changed are written over it."""
        changed = {key: value for key, value in self.model_dump().items()
                   if key != "finished_muted_hosts" and before.model_dump().get(key) != value}
        now = stored.model_copy(update=changed)
        for name in set(self.finished_muted_hosts) - set(before.finished_muted_hosts):
            now = now.with_finished_for(name, False)
        for name in set(before.finished_muted_hosts) - set(self.finished_muted_hosts):
            now = now.with_finished_for(name, True)
        return now


class AppSettings(BaseModel):
    """Everything in settings.json. New fields get defaults so older files still load; fields a newer app
    wrote are kept (and saved again), so going back a version never sets the file aside as damaged."""

    model_config = ConfigDict(frozen=True, extra="allow")

    version: Literal[1] = 1
    ceiling: CeilingSettings = Field(default_factory=CeilingSettings)
    login_item_offered: bool = False
    """The first-run offer to open the app at login was answered (either way): it is not made again."""
    hold_idle_sleep: bool = _default("hold_idle_sleep")
    """macOS: hold off this Mac's idle sleep while it keeps a busy request-metered box awake."""
    terminal_app: str = _default("terminal_app")
    """Open in terminal uses this (an app name on macOS, a program elsewhere); empty: this computer's default."""
    notices: NoticeSettings = Field(default_factory=NoticeSettings)

    def _holder(self, store: Store) -> BaseModel:
        match store:
            case Store.AGENTS:
                return self.ceiling
            case Store.NOTICES:
                return self.notices
            case Store.THIS_COMPUTER:
                return self
            case Store.SYSTEM:
                raise ValueError("a setting the system keeps is not in settings.json")
            case _:
                assert_never(store)

    def value_of(self, row: SettingRow) -> Any:
        """The stored value of `row` (not a SYSTEM row); its default where the file has none."""
        return getattr(self._holder(row.store), row.name, row.default)

    def with_changes(self, changes: Mapping[str, object]) -> AppSettings:
        """These settings with only `changes` (row name -> value) changed, each checked by its row (raises
        `SettingsError`): every other setting keeps its stored value, and fields a newer app wrote are kept."""
        by_store: dict[Store, dict[str, object]] = {}
        for name, value in changes.items():
            row = row_named(name)
            if row is None or row.store is Store.SYSTEM:
                raise SettingsError(name, f"{name!r} is not a setting kept in settings.json.")
            by_store.setdefault(row.store, {})[name] = check_setting(name, value)
        update: dict[str, object] = dict(by_store.pop(Store.THIS_COMPUTER, {}))
        if Store.AGENTS in by_store:
            update["ceiling"] = self.ceiling.replaced(**by_store.pop(Store.AGENTS))
        if Store.NOTICES in by_store:
            update["notices"] = self.notices.model_copy(update=by_store.pop(Store.NOTICES))
        assert not by_store, by_store
        return self.model_copy(update=update)
