"""This computer as a host: the embedded default a new user sees first.

The agent runs as a local process of this user (under launchd on macOS, a systemd user unit with linger,
or its own `--supervise` parent), is installed by the same push-by-hash code as a remote host, and is
reached on its Unix socket directly. It runs with the app's own Python, never the PATH's `python3`
(platform.interpreter, docs/macos.md). This computer never sleeps on a provider's timer, so the agent runs
without the network heartbeat.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from workroom.core.hosts import Host
from workroom.paths import agent_socket_dir
from workroom.platform.interpreter import local_python_command
from workroom.providers.base import Provider

if TYPE_CHECKING:  # the install, link and shell load with the first connection, never with a look (cli/look.py)
    from workroom.providers.agent_sockets import AgentPlace
    from workroom.remote.agent_client import EventHandler
    from workroom.remote.agent_install import AgentLayout, ServeOptions
    from workroom.remote.agent_link import AgentLink
    from workroom.remote.host_shell import HostShell

PROC_SELF_STAT = Path("/proc/self/stat")

log = logging.getLogger(__name__)


def app_exclusion(stat_path: Path = PROC_SELF_STAT) -> tuple[str, ...]:
    """`--exclude-pid PID:START` for this app where /proc gives its start time (field 22 of stat): the
    agent then leaves out this process and only it, also after a restart when the number may belong to
    another. Where there is no /proc (macOS, whose agent samples with `ps`), nothing: the app is left out
    as a live subscriber of the agent's socket, and `ps`'s first listing cannot vote CPU before it
    subscribes."""
    try:
        raw = stat_path.read_text(errors="replace")
        start = raw[raw.rfind(")") + 2:].split()[19]
    except (OSError, IndexError):
        return ()
    return ("--exclude-pid", f"{os.getpid()}:{start}") if start.isdigit() else ()


def local_layout(root: Path) -> AgentLayout:
    """Where this computer's agent lives under the app's state folder `root`."""
    from workroom.remote.agent_install import AgentLayout

    # A socket path too long for the kernel moves to a private folder of this user's (paths.agent_socket_dir).
    return AgentLayout(install_dir=str(root / "agent"), state_dir=str(agent_socket_dir(root / "run")))


def running_agent_pid(root: Path) -> int | None:
    """The process of this computer's agent when one listens at its socket (started by the app or by an explicit
    `workroom connect`, never by a look), else None: asked of the socket's peer, never of a pid file."""
    import socket

    from workroom.app_link import peer_pid

    path = local_layout(root).socket_path
    if not os.path.exists(path):
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(path)
        except OSError:
            return None
        return peer_pid(sock)


class LocalProvider(Provider):
    def layout(self, host: Host) -> AgentLayout:
        return local_layout(self.context.state_dir)

    def python_command(self, host: Host) -> tuple[str, ...]:
        return local_python_command()

    def serve_options(self, host: Host) -> ServeOptions:
        from workroom.remote.agent_install import ServeOptions

        # The app (and what it runs) is not the user's work: the agent leaves its process tree out.
        return ServeOptions(workroom=host.name, candidates=host.agent_candidates or "user", heartbeat=False,
                            extra=app_exclusion())

    def open_shell(self, host: Host) -> HostShell:
        from workroom.remote.host_shell import LocalShell

        return LocalShell()

    async def open_link(self, host: Host, shell: HostShell, socket_path: str, on_event: EventHandler) -> AgentLink:
        from workroom.remote.agent_link import open_unix_link

        return await open_unix_link(os.path.expanduser(socket_path), on_event)

    def login_of(self, host: Host, shell: HostShell) -> str:
        return f"this computer, uid {os.getuid()}"

    async def open_direct_link(self, host: Host, shell: HostShell, binding: str,
                               on_event: EventHandler) -> tuple[AgentLink, AgentPlace] | None:
        """The socket where the agent listened at the last connect, before the install probe has run: the
        probe is a Python process of its own (~50 ms), the socket a connect. As every link to this
        computer's agent, it is refused unless its folder is private and the process behind it is this
        user's (`open_unix_link`)."""
        if self.context.agent_sockets is None:
            return None
        place = await asyncio.to_thread(self.remembered_place, host, binding)  # off the loop: it reads the file
        if place is None:
            return None
        try:
            return await self.open_link(host, shell, place.socket, on_event), place
        except OSError as failed:  # not there, nobody listening, or not this user's
            log.info("%s: the agent's socket did not open (%s); probing", host.name, failed)
            return None
