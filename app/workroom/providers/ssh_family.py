"""Providers reached over SSH: plain SSH, exe.dev and containers (three rows of core.provider_specs over
`SshProvider`), and boxd, which also reads the machine's state from the `boxd` command line so a background
look never wakes a sleeping box.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING

from workroom.core.host_text import plain
from workroom.core.hosts import Host
from workroom.core.provider_specs import MACHINE_NAME
from workroom.providers.base import BoxState, Provider, ProviderUnreadable
from workroom.providers.bounded_cli import CliProblem, run_cli
from workroom.providers.idle_clock import ASLEEP_STATES, AWAKE_STATES, reading_from

if TYPE_CHECKING:
    # The shell, the link and paramiko load with the first connection: a look without the app reads a provider's
    # control plane only (cli/look.py) and imports none of them (docs/cli.md, start-up).
    from workroom.core.heartbeat_proof import IdleClockReading
    from workroom.providers.agent_sockets import AgentPlace
    from workroom.remote.agent_client import EventHandler
    from workroom.remote.agent_link import AgentLink
    from workroom.remote.host_shell import HostShell
    from workroom.remote.ssh_config import SshTarget
    from workroom.remote.ssh_connection import SocketStream

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_SECONDS = 10.0
BOXD_ANSWER_BYTES = 64 * 1024  # `boxd machine status --json` answers in a few hundred bytes


class SshProvider(Provider):
    """Any machine reached with SSH (honouring ~/.ssh/config); the agent is reached through its `relay`."""

    def target(self, host: Host) -> SshTarget:
        from workroom.remote.ssh_config import resolve_target

        identity = host.identity.value if host.identity is not None and host.identity.kind == "file" else None
        return resolve_target(host.connect_address, port=host.port, user=host.user, identity=identity)

    def open_shell(self, host: Host) -> HostShell:
        assert self.context.known_hosts is not None
        from workroom.providers.ssh_shell import SshShell
        from workroom.remote.ssh_connection import SshConnection

        connection = SshConnection.connect(
            self.target(host),
            self.context.known_hosts,
            timeout=CONNECT_TIMEOUT_SECONDS,
            ask_secret=self.context.secret_lookup,
        )
        return SshShell(connection)

    def relay_argv(self, host: Host, socket_path: str) -> list[str]:
        # The same Python as every install step (`python_command`), from the home the SSH command starts in.
        from workroom.remote.agent_install import relay_argv

        return relay_argv(self.python_command(host), self.layout(host).bundle_path, socket_path)

    async def open_link(self, host: Host, shell: HostShell, socket_path: str, on_event: EventHandler) -> AgentLink:
        from workroom.remote.agent_install import relay_command

        cmd = relay_command(self.python_command(host), self.context.agent_bundle(), socket_path)
        return await self._stream_link(host, shell, cmd, on_event, None)

    async def open_probed_link(self, host: Host, shell: HostShell, command: str,
                               on_event: EventHandler) -> AgentLink:
        from workroom.remote.agent_install import PROBE_ANSWER_LIMIT

        return await self._stream_link(host, shell, command, on_event, PROBE_ANSWER_LIMIT)

    def login_of(self, host: Host, shell: HostShell) -> str:
        """The user, address and port the connection resolved to (~/.ssh/config applied) and the host key it
        was accepted with: another user, another machine or a rebuilt one is another login."""
        from workroom.providers.ssh_shell import SshShell

        if not isinstance(shell, SshShell):
            return ""
        target, key = shell.connection.target, shell.connection.host_key
        return f"{target.user}@{target.hostname}:{target.port} {key.key_type} {key.fingerprint}"

    async def open_direct_link(self, host: Host, shell: HostShell, binding: str,
                               on_event: EventHandler) -> tuple[AgentLink, AgentPlace] | None:
        from workroom.providers.ssh_shell import SshShell, StreamAdapter
        from workroom.remote.agent_link import open_stream_link
        from workroom.remote.ssh_connection import SocketRefused

        if self.context.agent_sockets is None or not isinstance(shell, SshShell):
            return None

        def open_it() -> tuple[SocketStream, AgentPlace] | None:  # off the loop: the first look reads the file
            place = self.remembered_place(host, binding)
            return None if place is None else (shell.connection.open_socket_stream(place.socket), place)

        try:
            opened = await asyncio.get_running_loop().run_in_executor(None, open_it)
        except SocketRefused as refused:
            log.info("%s: %s; reaching the agent with a command", host.name, refused.message)
            return None
        if opened is None:
            return None
        stream, place = opened
        return open_stream_link(StreamAdapter(stream), on_event, name=host.name), place

    async def _stream_link(self, host: Host, shell: HostShell, cmd: str, on_event: EventHandler,
                           preamble: int | None) -> AgentLink:
        from workroom.providers.ssh_shell import SshShell, StreamAdapter
        from workroom.remote.agent_link import open_stream_link

        assert isinstance(shell, SshShell)
        loop = asyncio.get_running_loop()
        stream = await loop.run_in_executor(None, shell.connection.open_exec_channel, cmd)
        return open_stream_link(StreamAdapter(stream), on_event, name=host.name, preamble=preamble)


class BoxdProvider(SshProvider):
    """boxd VMs hibernate after network silence; the `boxd` CLI tells their state without waking them."""

    cli = "boxd"

    async def box_state(self, host: Host) -> BoxState:
        out = await self._machine_status(host)
        state = parse_boxd_state(out)
        if state is BoxState.UNKNOWN:
            raise ProviderUnreadable("boxd", boxd_state_words(out))
        return state

    async def read_idle_clock(self, host: Host) -> IdleClockReading | None:
        """The idle time `boxd machine status` reports (a call to boxd's API, never to the box)."""
        try:
            out = await self._machine_status(host)
        except ProviderUnreadable:
            return None
        return parse_boxd_idle(out, time.monotonic())

    async def _machine_status(self, host: Host) -> bytes:
        """`boxd machine status NAME --json`'s output; `ProviderUnreadable` with why when there is none (no
        CLI, no answer within 10 s, an answer too large: providers/bounded_cli.py)."""
        name = MACHINE_NAME.of(host.reference) or host.connect_address
        try:
            answer = await run_cli([self.cli, "machine", "status", name, "--json"], timeout=10,
                                   limit=BOXD_ANSWER_BYTES)
        except CliProblem as problem:
            raise ProviderUnreadable("boxd", problem.words) from None
        return answer.stdout


def parse_boxd_idle(output: bytes, read_at: float) -> IdleClockReading | None:
    """`idle_seconds` (and `idle_window_seconds`, when given) of an awake machine; None otherwise."""
    try:
        data = json.loads(output)
    except (ValueError, RecursionError):
        return None
    if parse_boxd_state(output) is not BoxState.AWAKE:
        return None
    return reading_from(data, read_at)


def boxd_state_words(output: bytes) -> str:
    """Why `boxd machine status`'s answer says neither awake nor asleep, in words (the state it named, if any)."""
    try:
        data = json.loads(output)
    except (ValueError, RecursionError):
        return "`boxd machine status` did not answer with a machine's status"
    state = data.get("state") if isinstance(data, dict) else None
    if not isinstance(state, str) or not state:
        return "`boxd machine status` named no state"
    return f"it says the machine is {plain(state, 40)!r}, neither awake nor asleep"


def parse_boxd_state(output: bytes) -> BoxState:
    """`boxd machine status NAME --json` -> awake/asleep; anything unexpected -> unknown."""
    try:
        data = json.loads(output)
    except (ValueError, RecursionError):
        return BoxState.UNKNOWN
    state = str(data.get("state", "")).lower() if isinstance(data, dict) else ""
    if state in ASLEEP_STATES:
        return BoxState.ASLEEP
    if state in AWAKE_STATES:
        return BoxState.AWAKE
    return BoxState.UNKNOWN


