"""Where each host's agent listens, remembered across runs, so a reconnect reaches it in one round trip.

After every connect the session hands its install report here; the next connect to that host (in this run
or the next) first opens a stream straight to that socket over the SSH connection (OpenSSH's streamlocal
forwarding) and takes it only if the agent there proves who it is (remote/agent_proof.py) and is this app's
build, not stalled. Anything else -- nothing remembered, sshd refuses, a dead socket, another build, no
proof -- and the connect goes the way it always went: the install probe first (docs/protocol.md, transport).
So the file is only a hint: a missing, damaged or foreign one loses nothing but that round trip, and it is
never trusted for anything but where to knock. Each place is bound (`binding`, providers/agent_keys.py) to
the host as configured and the login it resolved to; a place of another binding is never knocked on.
Every change is a locked read-modify-write of the one host's entry (`storage.update_json`), so the app and a
`workroom` command remembering different hosts at once both keep theirs.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workroom.paths import AGENT_SOCKETS_FILE_NAME
from workroom.remote.host_answers import is_safe_path
from workroom.storage import read_json_object, update_json

log = logging.getLogger(__name__)

FILE_NAME = AGENT_SOCKETS_FILE_NAME
MAX_BYTES = 256 * 1024
MAX_HOSTS = 500
BINDING = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class AgentPlace:
    """An agent as its last connect found it: its socket and bundle on the host, and who supervises it."""

    socket: str
    bundle: str
    supervisor: str | None = None
    binding: str = ""
    """What it was found for (providers.agent_keys.binding_of): 32 hex digits; a place without one is not read."""


def _place(raw: object) -> AgentPlace | None:
    if not isinstance(raw, dict):
        return None
    socket, bundle, supervisor = raw.get("socket"), raw.get("bundle"), raw.get("supervisor")
    binding = raw.get("binding")
    if not (is_safe_path(socket) and is_safe_path(bundle) and str(socket).startswith("/")):
        return None
    if not (isinstance(binding, str) and BINDING.fullmatch(binding)):
        return None  # an older file's place, or a damaged one: probed first, then remembered anew
    return AgentPlace(str(socket), str(bundle), supervisor if is_safe_path(supervisor) else None, binding)


def _places(data: dict[str, Any]) -> dict[str, AgentPlace]:
    """The places a file's object holds (at most MAX_HOSTS); anything the app would not use is left out."""
    hosts = data.get("hosts")
    places: dict[str, AgentPlace] = {}
    for name, raw in (hosts.items() if isinstance(hosts, dict) else ()):
        place = _place(raw)
        if isinstance(name, str) and place is not None and len(places) < MAX_HOSTS:
            places[name] = place
    return places


class AgentSockets:
    """The remembered places, by host name: read once (lazily, and again after `forget_cached`), each change a
    locked read-modify-write of that host's entry."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / FILE_NAME
        self._lock = threading.Lock()
        self._places: dict[str, AgentPlace] | None = None

    def _loaded(self) -> dict[str, AgentPlace]:
        if self._places is None:
            self._places = _places(read_json_object(self.path, MAX_BYTES))
        return self._places

    def forget_cached(self) -> None:
        """The file changed behind this process's back: read it again when next asked."""
        with self._lock:
            self._places = None

    def get(self, name: str) -> AgentPlace | None:
        with self._lock:
            return self._loaded().get(name)

    def remember(self, name: str, place: AgentPlace | None) -> None:
        """Keep (or, with None, forget) where `name`'s agent is; writes the file when that changed (blocking).
        A file that cannot be written is logged: the next connect then probes first, as it always could."""
        if place is not None and _place(place.__dict__) != place:
            return
        with self._lock:
            places = self._loaded()
            if places.get(name) == place:
                return

            def change(data: dict[str, Any]) -> dict[str, Any]:
                now = _places(data)
                if place is None:
                    now.pop(name, None)
                elif name in now or len(now) < MAX_HOSTS:
                    now[name] = place
                return {"version": 1, "hosts": {n: p.__dict__ for n, p in sorted(now.items())}}

            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._places = _places(update_json(self.path, change, limit=MAX_BYTES))
            except OSError as exc:
                log.warning("could not write %s: %s", self.path, exc)
                if place is None:  # this run still knows it
                    places.pop(name, None)
                elif name in places or len(places) < MAX_HOSTS:
                    places[name] = place
