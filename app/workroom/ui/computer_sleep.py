"""Notices that this computer slept: a request-metered box it keeps awake by its own polls may have been
suspended meanwhile (the polls stop while it sleeps).

Two clocks drift apart by exactly the time asleep: one that stops while the computer sleeps (time.monotonic:
CLOCK_MONOTONIC on Linux, mach_absolute_time on macOS) and one that does not (CLOCK_BOOTTIME on Linux,
CLOCK_MONOTONIC on macOS; the wall clock elsewhere, where a clock step could read as a sleep). A local timer
compares them every CHECK_SECONDS; it reads two clocks and sends nothing anywhere.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

CHECK_SECONDS = 15
SLEPT_THRESHOLD_SECONDS = 30.0


def _counts_sleep() -> Callable[[], float]:
    if hasattr(time, "CLOCK_BOOTTIME"):
        return lambda: time.clock_gettime(time.CLOCK_BOOTTIME)
    if sys.platform == "darwin":
        return lambda: time.clock_gettime(time.CLOCK_MONOTONIC)
    return time.time


class ComputerSleepWatch(QObject):
    woke = Signal(float)
    """Seconds this computer was asleep (at least SLEPT_THRESHOLD_SECONDS)."""

    def __init__(self, *, stops_in_sleep: Callable[[], float] = time.monotonic,
                 counts_sleep: Callable[[], float] | None = None) -> None:
        super().__init__()
        self._awake = stops_in_sleep
        self._total = counts_sleep or _counts_sleep()
        self._offset = self._total() - self._awake()
        self.timer = QTimer(self)
        self.timer.setInterval(CHECK_SECONDS * 1000)
        self.timer.timeout.connect(self.check)

    def start(self) -> None:
        self._offset = self._total() - self._awake()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def check(self) -> None:
        offset = self._total() - self._awake()
        slept, self._offset = offset - self._offset, offset
        if slept >= SLEPT_THRESHOLD_SECONDS:
            self.woke.emit(slept)
