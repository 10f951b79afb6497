"""A launched program's failure, carried from the thread that reaped it to the window (platform/desktop_open)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class OpenFailed(QObject):
    """`said` is emitted from the reaper's thread; Qt queues it to the thread this object lives in (the GUI's)."""

    said = Signal(str)
