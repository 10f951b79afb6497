"""The engine's files changed behind its back: tell it, within a moment, without polling.

Another process may write the files the app keeps (an older `workroom` command that does not go through the app,
a hand edit, a second profile's tool): Qt's QFileSystemWatcher says so when it happens (inotify on Linux, FSEvents
on macOS), and the engine reads them again (`Engine.reload_changed_files`, which says in the log what it took).

Both folders are watched (a file replaced by rename is a change of its folder) and each file too (an editor that
writes in place changes only the file); a file replaced by rename is a new file, so its watch is set again after
each change. Changes come in bursts (a temp file made, written, renamed): they are taken together after
`SETTLE_MS`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer

from workroom.known_records import VERDICTS_FILE_NAME
from workroom.sessions.engine import Engine

log = logging.getLogger(__name__)

SETTLE_MS = 150
"""How long a burst of changes is gathered before the files are read (well within the second a change may take
to show)."""


class FileWatch(QObject):
    def __init__(self, engine: Engine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        paths = engine.paths
        self.folders = [paths.config_dir, paths.state_dir]
        self.files = [paths.hosts_file, paths.settings_file, paths.state_dir / VERDICTS_FILE_NAME,
                      paths.agent_sockets_file]
        self._watcher = QFileSystemWatcher(self)
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._read_again)
        self._watcher.directoryChanged.connect(self._changed)
        self._watcher.fileChanged.connect(self._changed)
        self.reloads = 0

    def start(self) -> None:
        missing = self._watcher.addPaths([str(f) for f in self.folders if f.is_dir()])
        if missing:
            log.warning("cannot watch %s for changes made outside the app", ", ".join(missing))
        self._watch_files()

    def stop(self) -> None:
        self._settle.stop()
        watched = self._watcher.files() + self._watcher.directories()
        if watched:
            self._watcher.removePaths(watched)

    def _watch_files(self) -> None:
        watched = set(self._watcher.files())
        wanted = [str(f) for f in self.files if str(f) not in watched and Path(f).is_file()]
        if wanted:
            self._watcher.addPaths(wanted)

    def _changed(self, _path: str) -> None:
        self._settle.start()

    def _read_again(self) -> None:
        self._watch_files()
        self.reloads += 1
        try:
            self.engine.reload_changed_files()
        except Exception:  # a face's bug must not stop the watch
            log.exception("reading the app's files again failed")
