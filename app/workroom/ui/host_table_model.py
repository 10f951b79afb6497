"""The host list as a Qt model: one row per host, rendered from the latest `HostSnapshot`.

Rows change one at a time (`dataChanged` for that row only), so a hundred hosts streaming status
cost a hundred small repaints, not a hundred table resets.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, QTimer

from workroom.core.badge import Badge
from workroom.core.errors import Face
from workroom.core.host_snapshot import HostSnapshot
from workroom.ui import row_text
from workroom.ui.badge_icons import icon_for
from workroom.ui.plain_widgets import tooltip

Index = QModelIndex | QPersistentModelIndex
SNAPSHOT_ROLE = Qt.ItemDataRole.UserRole + 1
BADGE_KIND_ROLE = Qt.ItemDataRole.UserRole + 2


class Column(IntEnum):
    NAME = 0
    PROVIDER = 1
    BADGE = 2
    BUSY = 3
    BUSY_FOR = 4
    CONNECTION = 5


HEADERS = {
    Column.NAME: "Workroom",
    Column.PROVIDER: "Provider",
    Column.BADGE: "State",
    Column.BUSY: "Busy because",
    Column.BUSY_FOR: "Busy for",
    Column.CONNECTION: "Connection",
}


class HostTableModel(QAbstractTableModel):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._snapshots: list[HostSnapshot] = []
        self._rows: dict[str, int] = {}
        self.expiry = QTimer(self)
        """Fires once, when the earliest row's badge stops being true (`Badge.valid_until`), to redraw the rows:
        nothing else would arrive then from an idle box that sleeps."""
        self.expiry.setSingleShot(True)
        self.expiry.setTimerType(Qt.TimerType.PreciseTimer)
        self.expiry.timeout.connect(self._badges_expired)
        self._valid_until: dict[str, float] = {}

    # -- feeding ----------------------------------------------------------------------------------

    def set_snapshots(self, snapshots: list[HostSnapshot]) -> None:
        self.beginResetModel()
        self._snapshots = list(snapshots)
        self._rows = {s.host.name: i for i, s in enumerate(self._snapshots)}
        self.endResetModel()
        self._valid_until.clear()
        self._note_expiry(self._snapshots)

    def update(self, snapshot: HostSnapshot) -> None:
        """Replace one host's snapshot (appending a row for a host not seen yet)."""
        row = self._rows.get(snapshot.host.name)
        if row is None:
            row = len(self._snapshots)
            self.beginInsertRows(QModelIndex(), row, row)
            self._snapshots.append(snapshot)
            self._rows[snapshot.host.name] = row
            self.endInsertRows()
        else:
            self._snapshots[row] = snapshot
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(Column) - 1))
        self._note_expiry([snapshot])

    def remove(self, name: str) -> None:
        row = self._rows.get(name)
        if row is None:
            return
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._snapshots[row]
        self._rows = {s.host.name: i for i, s in enumerate(self._snapshots)}
        self.endRemoveRows()
        self._note_expiry([])

    def refresh_times(self) -> None:
        """Re-render the time-dependent columns (state ages, busy time, retry countdown)."""
        if self._snapshots:
            self.dataChanged.emit(self.index(0, Column.BADGE), self.index(len(self._snapshots) - 1, Column.CONNECTION))

    def _note_expiry(self, snapshots: list[HostSnapshot]) -> None:
        now = self._clock()
        for snap in snapshots:
            until = snap.badge(now).valid_until
            if until is None:
                self._valid_until.pop(snap.host.name, None)
            else:
                self._valid_until[snap.host.name] = until
        names = set(self._rows)
        for gone in [n for n in self._valid_until if n not in names]:
            del self._valid_until[gone]
        if not self._valid_until:
            self.expiry.stop()
            return
        wait = max(0.0, min(self._valid_until.values()) - now)
        self.expiry.start(min(math.ceil(wait * 1000) + 1, 2**31 - 1))

    def _badges_expired(self) -> None:
        self.refresh_times()
        self._note_expiry(self._snapshots)

    # -- reading ----------------------------------------------------------------------------------

    def snapshot(self, name_or_row: str | int) -> HostSnapshot | None:
        row = self._rows.get(name_or_row) if isinstance(name_or_row, str) else name_or_row
        if row is None or not 0 <= row < len(self._snapshots):
            return None
        return self._snapshots[row]

    def snapshots(self) -> list[HostSnapshot]:
        return list(self._snapshots)

    def row_of(self, name: str) -> int | None:
        return self._rows.get(name)

    def badge(self, row: int) -> Badge:
        return self._snapshots[row].badge(self._clock())

    # -- QAbstractTableModel ----------------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self._snapshots)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(Column)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation is Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[Column(section)]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._snapshots):
            return None
        snap = self._snapshots[index.row()]
        column = Column(index.column())
        if role == SNAPSHOT_ROLE:
            return snap
        now = self._clock()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(snap, column, now)
        if column is Column.BADGE:
            if role == Qt.ItemDataRole.DecorationRole:
                return icon_for(snap.badge(now).kind)
            if role == Qt.ItemDataRole.ToolTipRole:
                return tooltip(row_text.badge_tooltip(snap, now))
            if role == BADGE_KIND_ROLE:
                return snap.badge(now).kind
        if role == Qt.ItemDataRole.ToolTipRole:
            if column is Column.BUSY:
                return tooltip(row_text.raw_signal_text(snap))
            if column is Column.CONNECTION:  # the cell may be elided
                error = snap.connection.error
                return tooltip(error.text(Face.APP) if error is not None else self._text(snap, column, now))
        return None

    @staticmethod
    def _text(snap: HostSnapshot, column: Column, now: float) -> str:
        if column is Column.NAME:
            return snap.host.name
        if column is Column.PROVIDER:
            return snap.host.provider
        if column is Column.BADGE:
            return row_text.badge_text(snap, now)
        if column is Column.BUSY:
            return row_text.busy_text(snap, now)
        if column is Column.BUSY_FOR:
            return row_text.busy_for_text(snap, now)
        return row_text.connection_text(snap, now)
