"""A platform box's host-key pin, kept in the state folder (docs/security.md, "Platform boxes").

A Coder workspace's or a codespace's SSH key is vouched for by the platform's own channel and pinned for one run
of the box (remote.host_keys.ChannelVouchedKeys): another key within the same run is refused as changed, a new
run's key is taken. Kept in memory only, that promise held for the app and not for commands run without it (each
trusted whatever key the box showed). So the pins live in `platform_key_pins.json` beside the other state files:
one entry per box (the SSH target's name, `coder.NAME`, `codespaces.NAME`) with its run and its key's SHA256
fingerprint, each change a locked read-modify-write (storage.update_json: 0600, atomic, a regular file only).

A damaged or missing file holds no pin: the next key is pinned afresh, as a first connect's is. A file that cannot
be written is logged and the pin kept in this process's memory, so this run's promise still holds.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

from workroom.remote.host_keys import KeyPins
from workroom.storage import update_json

log = logging.getLogger(__name__)

FILE_NAME = "platform_key_pins.json"
MAX_BYTES = 256 * 1024
MAX_HOSTS = 500
FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/]{43}")
MAX_RUN_CHARS = 200


def _pins(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The pins a file's object holds (at most MAX_HOSTS); an entry of any other shape is left out."""
    raw = data.get("pins")
    pins: dict[str, tuple[str, str]] = {}
    for host, entry in (raw.items() if isinstance(raw, dict) else ()):
        if not (isinstance(host, str) and isinstance(entry, dict) and len(pins) < MAX_HOSTS):
            continue
        run, key = entry.get("run"), entry.get("key")
        if isinstance(run, str) and len(run) <= MAX_RUN_CHARS and isinstance(key, str) and FINGERPRINT.fullmatch(key):
            pins[host] = (run, key)
    return pins


def _object(pins: dict[str, tuple[str, str]]) -> dict[str, Any]:
    return {"version": 1, "pins": {h: {"run": run, "key": key} for h, (run, key) in sorted(pins.items())}}


class PlatformKeyPins(KeyPins):
    """The pins of `state_dir`'s file, read and written at each ask (a connect's, milliseconds)."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__()
        self.path = state_dir / FILE_NAME
        self._lock = threading.Lock()

    def pin(self, host: str, run: str, presented: str) -> str:
        run = run[:MAX_RUN_CHARS]  # as kept: a longer one would never match itself
        pinned = [presented]

        def change(data: dict[str, Any]) -> dict[str, Any]:
            pins = _pins(data)
            kept = pins.get(host)
            if kept is not None and kept[0] == run:
                pinned[0] = kept[1]
            elif host in pins or len(pins) < MAX_HOSTS:
                pins[host] = (run, presented)
            return _object(pins)

        with self._lock:
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                update_json(self.path, change, limit=MAX_BYTES)
            except OSError as exc:
                log.warning("could not keep a platform box's key pin in %s (%s): kept for this run only",
                            self.path, exc)
                return super().pin(host, run, presented)
        return pinned[0]

    def forget(self, host: str) -> int:
        gone = [0]

        def change(data: dict[str, Any]) -> dict[str, Any]:
            pins = _pins(data)
            gone[0] = 1 if pins.pop(host, None) is not None else 0
            return _object(pins)

        with self._lock:
            try:
                update_json(self.path, change, limit=MAX_BYTES)
            except OSError as exc:
                log.warning("could not forget a platform box's key pin in %s (%s)", self.path, exc)
        return gone[0] + super().forget(host)
