"""This computer as a host: the embedded default a new user sees first.

The agent runs as a local process of this user (under launchd on macOS, a systemd user unit with linger,
or its own `--supervise` parent), is installed by the same push-by-hash code as a remote host, and is
reached on its Unix socket directly. It runs with the app's own Python, never the PATH's `python3`
(platform.interpreter, docs/macos.md). This computer never sleeps on a provider's timer, so the agent runs
without the network heartbeat.
"""

from __future__ import annotations

import os

from workroom.core.hosts import Host
from workroom.paths import agent_socket_dir
from workroom.platform.interpreter import local_python_command
from workroom.providers.base import Provider
from workroom.remote.agent_client import EventHandler
from workroom.remote.agent_install import AgentLayout, ServeOptions
from workroom.remote.agent_link import AgentLink, open_unix_link
from workroom.remote.host_shell import HostShell, LocalShell


class LocalProvider(Provider):
    def layout(self, host: Host) -> AgentLayout:
        root = self.context.state_dir
        # A socket path too long for the kernel moves to a private folder of this user's (paths.agent_socket_dir).
        return AgentLayout(install_dir=str(root / "agent"), state_dir=str(agent_socket_dir(root / "run")))

    def python_command(self, host: Host) -> tuple[str, ...]:
        return local_python_command()

    def serve_options(self, host: Host) -> ServeOptions:
        # The app (and what it runs) is not the user's work: the agent leaves its process tree out.
        return ServeOptions(workroom=host.name, candidates=host.agent_candidates or "user", heartbeat=False,
                            extra=("--exclude-pid", str(os.getpid())))

    def open_shell(self, host: Host) -> HostShell:
        return LocalShell()

    async def open_link(self, host: Host, shell: HostShell, socket_path: str, on_event: EventHandler) -> AgentLink:
        return await open_unix_link(os.path.expanduser(socket_path), on_event)
