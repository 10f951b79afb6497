"""Where each host's agent listens, remembered across runs, so a reconnect reaches it in one round trip.

After every connect the session hands its install report here; the next connect to that host (in this run
or the next) first opens a stream straight to that socket over the SSH connection (OpenSSH's streamlocal
forwarding) and takes it only if the agent there says hello as this app's build, not stalled. Anything
else -- nothing remembered, sshd refuses, a dead socket, another build -- and the connect goes the way it
always went: the install probe first (docs/protocol.md, transport). So the file is only a hint: a missing,
damaged or foreign one loses nothing but that round trip, and it is never trusted for anything but where
to knock.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from workroom.paths import AGENT_SOCKETS_FILE_NAME
from workroom.regular_file import read_regular_file
from workroom.remote.agent_install import is_safe_path
from workroom.storage import atomic_write_bytes

log = logging.getLogger(__name__)

FILE_NAME = AGENT_SOCKETS_FILE_NAME
MAX_BYTES = 256 * 1024
MAX_HOSTS = 500


@dataclass(frozen=True)
class AgentPlace:
    """An agent as its last connect found it: its socket and bundle on the host, and who supervises it."""

    socket: str
    bundle: str
    supervisor: str | None = None


def _place(raw: object) -> AgentPlace | None:
    if not isinstance(raw, dict):
        return None
    socket, bundle, supervisor = raw.get("socket"), raw.get("bundle"), raw.get("supervisor")
    if not (is_safe_path(socket) and is_safe_path(bundle) and str(socket).startswith("/")):
        return None
    return AgentPlace(str(socket), str(bundle), supervisor if is_safe_path(supervisor) else None)


class AgentSockets:
    """The remembered places, by host name: read once (lazily), written whole and atomically on a change."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / FILE_NAME
        self._lock = threading.Lock()
        self._places: dict[str, AgentPlace] | None = None

    def _loaded(self) -> dict[str, AgentPlace]:
        if self._places is None:
            self._places = {}
            try:
                data = json.loads(read_regular_file(self.path, MAX_BYTES))
            except FileNotFoundError:
                return self._places
            except (OSError, ValueError, RecursionError) as exc:
                log.info("ignoring %s (%s): every host is probed first", self.path, exc)
                return self._places
            hosts = data.get("hosts") if isinstance(data, dict) else None
            for name, raw in (hosts.items() if isinstance(hosts, dict) else ()):
                place = _place(raw)
                if isinstance(name, str) and place is not None and len(self._places) < MAX_HOSTS:
                    self._places[name] = place
        return self._places

    def get(self, name: str) -> AgentPlace | None:
        with self._lock:
            return self._loaded().get(name)

    def remember(self, name: str, place: AgentPlace | None) -> None:
        """Keep (or, with None, forget) where `name`'s agent is; writes the file when that changed (blocking).
        A file that cannot be written is logged: the next connect then probes first, as it always could."""
        with self._lock:
            places = self._loaded()
            if places.get(name) == place or (place is not None and _place(place.__dict__) != place):
                return
            if place is None:
                places.pop(name, None)
            elif name in places or len(places) < MAX_HOSTS:
                places[name] = place
            else:
                return
            data = {"version": 1, "hosts": {n: p.__dict__ for n, p in sorted(places.items())}}
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(self.path, json.dumps(data, indent=1).encode())
            except OSError as exc:
                log.warning("could not write %s: %s", self.path, exc)
