"""What changed in the engine's hosts and settings, as the faces hear it (`Engine.hosts_listeners`,
`Engine.settings_listeners`), and what an edit of a host changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workroom.core.app_settings import AppSettings
from workroom.core.hosts import Host
from workroom.core.setting_rows import Store, row_named, rows_in


@dataclass(frozen=True)
class HostsChange:
    """What changed in the hosts, for the faces: hosts added, removed, changed in what the connection uses (its
    session ended; connect again with the new settings) or only in what it does not (its price: the session goes
    on). `outside`: found in hosts.json, written by another process or by hand."""

    added: tuple[Host, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[Host, ...] = ()
    updated: tuple[Host, ...] = ()
    outside: bool = False

    @classmethod
    def between(cls, before: dict[str, Host], after: dict[str, Host], *, outside: bool) -> HostsChange:
        changed = [h for n, h in after.items() if n in before and before[n] != h]
        return cls(added=tuple(h for n, h in after.items() if n not in before),
                   removed=tuple(n for n in before if n not in after),
                   changed=tuple(h for h in changed if not only_price_differs(before[h.name], h)),
                   updated=tuple(h for h in changed if only_price_differs(before[h.name], h)),
                   outside=outside)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.updated)

    def words(self) -> str:
        parts = [f"{what} {', '.join(names)}" for what, names in (
            ("added", [h.name for h in self.added]), ("removed", list(self.removed)),
            ("changed", [h.name for h in (*self.changed, *self.updated)])) if names]
        return "; ".join(parts) or "nothing"


@dataclass(frozen=True)
class SettingsChange:
    """Which stored settings (row names, core.setting_rows) now hold another value; `outside` as for hosts."""

    names: frozenset[str]
    outside: bool = False


def changed_rows(before: AppSettings, after: AppSettings) -> frozenset[str]:
    return frozenset(row.name for row in rows_in(Store.AGENTS, Store.NOTICES, Store.THIS_COMPUTER)
                     if before.value_of(row) != after.value_of(row))


def row_store(name: str) -> Store | None:
    row = row_named(name)
    return None if row is None else row.store


def only_price_differs(old: Host, new: Host) -> bool:
    return old.model_copy(update={"hourly_price": new.hourly_price}) == new


def host_changes(was: Host, now: Host) -> dict[str, Any]:
    """The fields a person changed, from the host as they were shown it (`was`) to what they asked for (`now`):
    applied to the host as it is stored now (`Engine.edit_host`), so a field changed elsewhere meanwhile keeps
    that change."""
    before, after = was.model_dump(), now.model_dump()
    return {key: value for key, value in after.items() if before.get(key) != value}
