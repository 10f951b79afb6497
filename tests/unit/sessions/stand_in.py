"""A provider for HostSession tests without sshd or a second process.

What cannot run here is replaced, and only that: the host's shell answers the installer's probe with
"this bundle is installed and running" (so nothing is pushed), with the agent's key when the app's is not it
(as the probe does, from the agent's own key file), and opening a shell can be scripted to fail the way a real
SSH connection fails. The agent is real: wr_agent's own `Agent` and `Server`, run in
this process on a sampler and clock the test sets (tests/unit/agent/agentfake.py), serving a real Unix
socket that the session reaches with the app's own `open_unix_link`.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from unit.agent.agentfake import make_agent
from workroom.agent_bundle import AgentBundle
from workroom.core.hosts import Host
from workroom.core.provider_specs import ProviderSpec
from workroom.core.questions import SecretRequest
from workroom.core.traits import ProviderTraits
from workroom.providers.base import BoxState, Provider, ProviderContext
from workroom.remote.agent_client import EventHandler
from workroom.remote.agent_link import AgentLink, open_unix_link
from workroom.remote.host_keys import KnownHosts
from workroom.remote.host_shell import ExecResult, HostShell
from wr_agent import bundle
from wr_agent.agent_key import agent_key, key_id
from wr_agent.server import Server
from wr_agent.settings import Settings
from wr_agent.signals import Signals

BUILD = "b" * 64  # what agentfake's agent reports as its build
BUNDLE = AgentBundle(data=bundle.bundle_bytes(), sha256=BUILD, version="0.1.0")  # its bytes: the launcher


class InProcessAgent:
    """The real agent's request handling and event pushes, on a clock and signals the test sets."""

    def __init__(self) -> None:
        self.agent, self.sampler, self.clock = make_agent(Settings(14400, 600, False), hold_seconds=0)
        self._dir = tempfile.mkdtemp(prefix="wr-session-test-")  # short: a socket path has ~100 bytes
        self.socket_path = str(Path(self._dir) / "agent.sock")
        self._listen = socket.socket(socket.AF_UNIX)
        self._listen.bind(self.socket_path)
        self._listen.listen()
        self.server = Server(self.agent, self._listen)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.server.run, args=(self._stop,), name="test-agent", daemon=True)
        self._thread.start()

    def tick(self, signals: Signals) -> None:
        """One agent tick seeing `signals` (a CPU-bound job makes it BUSY); pushes what changed."""
        self.sampler.sig = signals
        self.clock.t += 1.0
        self.agent.tick()

    def close(self) -> None:
        self._stop.set()
        self.server.wake()
        self._thread.join(5)
        self.server.close()
        self._listen.close()
        shutil.rmtree(self._dir, ignore_errors=True)


class UpToDateShell:
    """Stands in for the host's shell: answers the installer's probe with this bundle installed and running."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.commands: list[str] = []
        self.closed = False

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0, **kw: Any) -> ExecResult:
        self.commands.append(cmd)
        probe = {"python": "3.11.4", "home": "/home/dev", "bundle": "~/.local/share/wr-agent/wr-agent.pyz",
                 "socket": self.socket_path, "sha256": BUILD, "version": BUNDLE.version, "running": True,
                 "systemd_user": False, "launchd": False, "supervisor": None, "running_build": BUILD}
        key = agent_key(self.socket_path)
        if f" {key_id(key)}" not in cmd:  # the app's key is not the agent's: the probe answers with it
            probe["key"] = key
        return ExecResult(0, json.dumps(probe).encode() + b"\n", b"")

    def put_file(self, data: bytes, remote_path: str, *, mode: int = 0o600) -> int:
        raise AssertionError("an up-to-date host gets nothing pushed")

    def close(self) -> None:
        self.closed = True


class ScriptedProvider(Provider):
    """Declares `traits`, reports `box` as the box's state, and opens shells as scripted: each entry of
    `shell_failures` is raised by one `open_shell` call, in order; after them the shell is `UpToDateShell`."""

    def __init__(self, context: ProviderContext, traits: ProviderTraits, *, box: BoxState = BoxState.UNKNOWN,
                 agent: InProcessAgent | None = None, shell_failures: list[Exception] | None = None) -> None:
        super().__init__(context, ProviderSpec("stand-in", "(a test's stand-in)", traits, "a scripted stand-in"))
        self._traits = traits
        self.box = box
        self.agent = agent
        self.shell_failures = list(shell_failures or [])
        self.shells: list[UpToDateShell] = []
        self.shell_attempts = 0
        self.box_reads = 0

    def traits(self, host: Host) -> ProviderTraits:
        return self._traits

    async def box_state(self, host: Host) -> BoxState:
        self.box_reads += 1
        return self.box

    def open_shell(self, host: Host) -> HostShell:
        self.shell_attempts += 1
        if self.shell_failures:
            raise self.shell_failures.pop(0)
        if self.agent is None:
            raise AssertionError("this test has no agent to reach")
        shell = UpToDateShell(self.agent.socket_path)
        self.shells.append(shell)
        return shell

    async def open_link(self, host: Host, shell: HostShell, socket_path: str, on_event: EventHandler) -> AgentLink:
        return await open_unix_link(socket_path, on_event)


def stand_in_context(tmp_path: Path,
                     forget_secret: Callable[[SecretRequest], None] | None = None) -> ProviderContext:
    return ProviderContext(bundle=BUNDLE, known_hosts=KnownHosts(tmp_path / "known_hosts", user_file=None),
                           state_dir=tmp_path, forget_secret=forget_secret)
