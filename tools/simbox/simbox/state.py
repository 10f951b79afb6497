"""Where the simulator keeps its state, and the state file's shape.

The state file is the contract between the daemon (which writes it, atomically, before and after every
resource it creates) and `down`/`status`/the app (which read it). Because every resource is recorded
before it is made, `down` can clean up after a daemon that crashed half-way.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATE_VERSION = 1


class SimboxError(Exception):
    """A simbox operation failed; the message says what and what to do."""


def simbox_dir(home: Path | None = None) -> Path:
    """The simbox's directory: the app's state dir + "simbox" (`workroom.paths`).

    With WORKROOM_HOME=X (or `home=X`) that is X/state/simbox; otherwise ~/.local/state/workroom/simbox
    on Linux. `home` stands for a WORKROOM_HOME root, so tests and the CLI agree on one rule.
    """
    from workroom import paths

    env = {paths.HOME_ENV: str(home)} if home is not None else None
    return paths.app_paths(env).state_dir / "simbox"


@dataclass
class BoxRecord:
    """One box: everything needed to reach it and to remove it."""

    name: str
    netns: str
    host_if: str
    box_if: str
    host_addr: str
    box_addr: str
    user: str
    home: str
    cgroup: str | None
    freezer: str
    idle_window_s: float
    dir: str
    uid: int | None = None
    init_pid: int | None = None  # the `ip netns exec ... unshare` process; sshd is PID 1 inside
    proxy_port: int | None = None
    host_key_line: str | None = None
    http_port: int | None = None  # request metering: loopback HTTP proxy -> box_addr:guest_port
    guest_port: int | None = None


@dataclass
class SimboxState:
    run_id: str
    daemon_pid: int
    idle_window_s: float
    ipv6: bool
    freezer: str
    client_key: str
    dir: str
    started_at: float
    ready: bool = False
    health_port: int | None = None
    error: str | None = None
    metering: str = "network"  # "network" (tap bytes, vmd-style) or "requests" (request meter)
    version: int = STATE_VERSION
    boxes: list[BoxRecord] = field(default_factory=list)

    @property
    def health_url(self) -> str | None:
        return f"http://127.0.0.1:{self.health_port}" if self.health_port else None

    def box(self, name: str) -> BoxRecord:
        for b in self.boxes:
            if b.name == name:
                return b
        raise SimboxError(f"no box named {name!r} (boxes: {', '.join(b.name for b in self.boxes)})")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SimboxState:
        if data.get("version") != STATE_VERSION:
            raise SimboxError(f"state file version {data.get('version')!r} is not {STATE_VERSION}")
        data = dict(data)
        boxes = [BoxRecord(**b) for b in data.pop("boxes", [])]
        return cls(**data, boxes=boxes)


def state_path(home: Path | None = None) -> Path:
    return simbox_dir(home) / "state.json"


def write_state(state: SimboxState, path: Path) -> None:
    """Atomic replace, so a reader never sees half a file."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=2))
    os.replace(tmp, path)


def read_state(path: Path) -> SimboxState | None:
    """The recorded state, or None when there is none. A corrupt file is an error, not 'nothing'."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        return SimboxState.from_json(json.loads(text))
    except (ValueError, TypeError) as exc:
        raise SimboxError(f"cannot read {path}: {exc}; remove it after checking nothing is left "
                          f"(ip netns list, users wrsb*)") from exc
