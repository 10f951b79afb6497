"""Reads an `ExecStream` on its own thread the way the app's relay reader does (remote/agent_link.py):
`recv` until b"", then ask the stream how it ended (`end_error()`). Lines and the end are collected for
the test to check; the end is recorded exactly once."""

from __future__ import annotations

import threading

from workroom.core.errors import UserError
from workroom.remote.ssh_connection import ExecStream


class StreamReader:
    def __init__(self, stream: ExecStream) -> None:
        self._stream = stream
        self.lines: list[bytes] = []
        self.ends: list[UserError | None] = []
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-stream-reader", daemon=True)

    def start(self) -> StreamReader:
        self._thread.start()
        return self

    def join(self, timeout: float) -> bool:
        """Wait for the end to have been recorded; True if it has."""
        return self._ended.wait(timeout)

    def _run(self) -> None:
        pending = b""
        try:
            while chunk := self._stream.recv(65536):
                pending += chunk
                *complete, pending = pending.split(b"\n")
                self.lines.extend(complete)
            self.ends.append(self._stream.end_error())
        finally:
            self._ended.set()
