"""This computer, as the settings see it: which `Capability` it has (a way to open the app at login, a hold
on its idle sleep) and the value of each setting the system keeps (open at login: the login item's state as
the system reports it, read back each time). The pane and `workroom settings` both ask here, through the
platform layer; core only names the capability.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, assert_never

from workroom.core.app_settings import AppSettings
from workroom.core.setting_rows import CAPABILITY_MISSING, Capability, SettingRow, Store, rows_in
from workroom.platform.login_item import LoginItem, LoginItemState, login_item
from workroom.platform.macos import power


@dataclass(frozen=True)
class ThisComputer:
    login_item: LoginItem | None
    """How this computer opens the app at login (None: it has no way)."""
    can_hold_idle_sleep: bool

    @classmethod
    def here(cls, profile_env: Mapping[str, str]) -> ThisComputer:
        """This computer as the platform layer finds it; `profile_env`: what a login item needs to start
        this app profile (paths.profile_env)."""
        return cls(login_item(profile_env), can_hold_idle_sleep=power() is not None)

    def has(self, capability: Capability) -> bool:
        match capability:
            case Capability.LOGIN_ITEM:
                return self.login_item is not None and self.login_item.state() is not LoginItemState.UNAVAILABLE
            case Capability.IDLE_SLEEP_HOLD:
                return self.can_hold_idle_sleep
            case _:
                assert_never(capability)

    def why_not(self, row: SettingRow) -> str | None:
        """Why `row` cannot be changed on this computer, or None when it can."""
        return None if row.needs is None or self.has(row.needs) else CAPABILITY_MISSING[row.needs]

    def _login_state(self, row: SettingRow) -> LoginItemState:
        assert row.store is Store.SYSTEM and row.needs is Capability.LOGIN_ITEM, row.name
        return self.login_item.state() if self.login_item is not None else LoginItemState.UNAVAILABLE

    def read(self, row: SettingRow) -> bool:
        """A SYSTEM row's value, read from the system now."""
        return self._login_state(row) in (LoginItemState.ON, LoginItemState.NEEDS_APPROVAL)

    def write(self, row: SettingRow, value: bool) -> None:
        """Set a SYSTEM row's value in the system (raises the platform's error, an OSError, in words)."""
        self._login_state(row)
        assert self.login_item is not None
        self.login_item.enable() if value else self.login_item.disable()

    def note(self, row: SettingRow) -> str:
        """What the system says of a SYSTEM row's value, in words ("" when there is nothing to add)."""
        state = self._login_state(row)
        if state is LoginItemState.UNAVAILABLE:
            return CAPABILITY_MISSING[Capability.LOGIN_ITEM]
        if state is LoginItemState.NEEDS_APPROVAL:
            return "Waiting for your approval in System Settings › General › Login Items."
        if state is LoginItemState.ON and self.login_item is not None:
            return f"Opens at login ({self.login_item.where()})."
        return ""

    def values(self, settings: AppSettings) -> dict[str, Any]:
        """Every row's value: stored ones from `settings`, the system's read back now."""
        return {row.name: self.read(row) if row.store is Store.SYSTEM else settings.value_of(row)
                for row in rows_in(*Store)}
