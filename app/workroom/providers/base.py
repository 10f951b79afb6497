"""What every provider offers the session: its traits, how to reach the host, where the agent lives.

A provider is declared by its row in core.provider_specs (kind, traits, reference fields, this class) and
implements the few verbs below; the session decides everything from the traits, never from the provider's
name (docs/providers.md). Every verb has an answer on every provider: the base class's is the one for a
provider that cannot do it (`box_state` UNKNOWN, `read_idle_clock` None, `poll_health` a failure), so the
session asks every provider and never has to know which ones override what.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from workroom.core.errors import UserError
from workroom.core.hosts import Host
from workroom.core.metering import Keeper

if TYPE_CHECKING:
    # Types only: a look without the app (cli/look.py) reads providers' control planes and imports none of the
    # agent's install, link or shell modules (docs/cli.md, start-up).
    from workroom.agent_bundle import AgentBundle
    from workroom.core.heartbeat_proof import IdleClockReading
    from workroom.core.install_report import InstallReport
    from workroom.core.keepawake import PollOutcome
    from workroom.core.platform_clock import PlatformClock, PlatformRules
    from workroom.core.provider_specs import ProviderSpec
    from workroom.core.questions import SecretRequest
    from workroom.core.traits import ProviderTraits
    from workroom.providers.agent_keys import AgentKeys
    from workroom.providers.agent_sockets import AgentPlace, AgentSockets
    from workroom.remote.agent_client import EventHandler
    from workroom.remote.agent_install import AgentInstaller, AgentLayout, ServeOptions
    from workroom.remote.agent_link import AgentLink
    from workroom.remote.host_keys import KnownHosts
    from workroom.remote.host_shell import HostShell


class BoxState(StrEnum):
    AWAKE = "awake"
    ASLEEP = "asleep"
    UNKNOWN = "unknown"
    """This provider cannot tell without waking the box."""


class ProviderUnreadable(UserError):
    """The provider should say whether the box sleeps, but could not be read now (its daemon gone, its CLI
    missing or failing, an answer of a shape it does not know). The box is shown "unknown: could not read the
    provider (why)" — never asleep, never offline — and nothing of ours connects to it unasked."""

    def __init__(self, provider: str, why: str) -> None:
        super().__init__("Could not read the provider", f"{provider}: {why}.",
                         "The app looks again on its own; Wake and connect (`--wake` on the command line) "
                         "reaches the box anyway, and may wake it.")


@dataclass
class ProviderContext:
    """What providers need from the app: the agent to push, the known hosts, secrets, folders."""

    bundle: AgentBundle | None
    """The agent to push; None in a look's context (cli/look.py), which connects to nothing: finding the bundle
    hashes the agent's sources, a third of a look's time."""
    known_hosts: KnownHosts | None
    state_dir: Path
    secret_lookup: Callable[[SecretRequest], str | None] | None = None
    """Answers a login's secret request (blocking; from the keyring, or by asking the user), or None."""
    forget_secret: Callable[[SecretRequest], None] | None = None
    """Drops a secret the host refused, so a wrong stored passphrase is not retried (blocking)."""
    agent_sockets: AgentSockets | None = None
    """Where each host's agent listened at its last connect (providers.agent_sockets), or None: not kept."""
    agent_keys: AgentKeys | None = None
    """Each host's agent key (providers.agent_keys), or None: no agent can prove who it is, none is trusted."""

    def agent_bundle(self) -> AgentBundle:
        """The agent to push. Only a context that connects asks (a look's has none to give)."""
        if self.bundle is None:
            raise RuntimeError("this provider context connects to nothing: it has no agent bundle")
        return self.bundle

    def forget_agent(self, name: str) -> None:
        """Blocking: forget where the agent of host `name` was and its key (the host was removed or edited,
        or its agent uninstalled): nothing remembered of it is used for whatever the name names next."""
        place = self.agent_sockets.get(name) if self.agent_sockets is not None else None
        if self.agent_sockets is not None:
            self.agent_sockets.remember(name, None)
        if place is not None and self.agent_keys is not None:
            self.agent_keys.forget(name, place.binding)


class Provider:
    """Base provider: one instance per provider row (`spec`); subclasses override what differs."""

    connects_only_when_awake: bool = False
    """Connecting starts the box whenever it is not running right now (a platform's own stdio tunnel): the
    session connects only when `box_state` reads awake, and wakes it only through `wake`."""
    platform_rules: PlatformRules | None = None
    """How the session paces a platform's keep-alive (metering `sessions`); None elsewhere."""

    def __init__(self, context: ProviderContext, spec: ProviderSpec) -> None:
        self.context = context
        self.spec = spec

    @property
    def kind(self) -> str:
        return self.spec.kind

    def traits(self, host: Host) -> ProviderTraits:
        """The host's traits, as its spec computes them (`Host.traits`: the one place). Only stand-ins in
        tests override this."""
        return host.traits

    def layout(self, host: Host) -> AgentLayout:
        from workroom.remote.agent_install import AgentLayout

        return AgentLayout()

    def installer(self, host: Host, shell: HostShell) -> AgentInstaller:
        """The one way an installer for this host is made (every connect, and uninstall): this app's bundle, the
        host's layout, serve options and Python."""
        from workroom.remote.agent_install import AgentInstaller

        return AgentInstaller(shell, self.context.agent_bundle(), self.layout(host), self.serve_options(host),
                              self.python_command(host))

    def python_command(self, host: Host) -> tuple[str, ...]:
        """How the agent's Python is started on the host: `python3` from its PATH unless said otherwise."""
        from workroom.remote.agent_install import PYTHON3

        return PYTHON3

    def serve_options(self, host: Host) -> ServeOptions:
        from workroom.remote.agent_install import ServeOptions

        traits = self.traits(host)
        heartbeat = traits.metering.keeper is Keeper.AGENT_HEARTBEAT  # the agent keeps it awake (core.metering)
        return ServeOptions(
            workroom=host.name,
            candidates=host.agent_candidates,
            heartbeat=heartbeat,
            heartbeat_interval=traits.heartbeat_interval_seconds if heartbeat else None,
        )

    def open_shell(self, host: Host) -> HostShell:
        """Blocking: a shell on the host (may raise a host-key question or a connection error)."""
        raise NotImplementedError

    async def open_link(self, host: Host, shell: HostShell, socket_path: str,
                        on_event: EventHandler) -> AgentLink:
        """A live stream to the agent on the host."""
        raise NotImplementedError

    def relay_argv(self, host: Host, socket_path: str) -> list[str] | None:
        """The relay's command on the host (run by `python_command`), or None when the agent is reached
        another way (this computer: its socket). A provider with one offers `open_probed_link`."""
        return None

    async def open_direct_link(self, host: Host, shell: HostShell, binding: str,
                               on_event: EventHandler) -> tuple[AgentLink, AgentPlace] | None:
        """A stream straight to the socket where the host's agent listened at its last connect (nothing
        started on the host), with that place; None when none is remembered for `binding` or the host will
        not open it. The session keeps it only if the agent there proves who it is (docs/protocol.md,
        transport)."""
        return None

    def login_of(self, host: Host, shell: HostShell) -> str:
        """The login `shell` resolved to (who, where), for `agent_binding`; "" where the provider cannot say."""
        return ""

    def agent_binding(self, host: Host, shell: HostShell) -> str:
        """What this connect's agent is remembered under (its place, its key): the host as configured and the
        login its shell resolved to (providers.agent_keys.binding_of)."""
        from workroom.providers.agent_keys import binding_of

        return binding_of(host, self.login_of(host, shell))

    def remembered_place(self, host: Host, binding: str) -> AgentPlace | None:
        """Blocking: where the agent bound to `binding` was at its last connect. A place remembered for another
        binding (the host was edited, or its login resolves otherwise now) is forgotten, with its key."""
        memo = self.context.agent_sockets
        place = memo.get(host.name) if memo is not None else None
        if place is not None and place.binding != binding:
            self.context.forget_agent(host.name)
            return None
        return place

    def agent_key(self, host: Host, binding: str) -> str | None:
        """Blocking: the key the app holds for the agent bound to `binding` (None: none)."""
        keys = self.context.agent_keys
        return keys.get(host.name, binding) if keys is not None else None

    def may_hold_agent_key(self, host: Host, binding: str) -> bool:
        """Non-blocking: whether `agent_key` may give a key (else a remembered socket is not worth opening)."""
        keys = self.context.agent_keys
        return keys is not None and keys.may_hold(host.name, binding)

    def remember_agent(self, host: Host, binding: str, install: InstallReport | None, key: str | None = None) -> None:
        """Blocking: where the agent bound to `binding` is after a connect (or forget the place, with None) for
        `open_direct_link`, and its key when the probe gave a new one."""
        keys = self.context.agent_keys
        if key is not None and keys is not None:
            keys.keep(host.name, binding, key)
        from workroom.providers.agent_sockets import AgentPlace

        memo = self.context.agent_sockets
        if memo is None:
            return
        place = None if install is None or not install.socket_path.startswith("/") else AgentPlace(
            install.socket_path, install.bundle_path, install.supervisor, binding)
        memo.remember(host.name, place)

    async def open_probed_link(self, host: Host, shell: HostShell, command: str,
                               on_event: EventHandler) -> AgentLink:
        """A stream running `command` -- the install probe, then perhaps the relay in the same process
        (`AgentInstaller.probe_then_relay_command`) -- whose first line, the probe's answer, is `link.preamble`."""
        raise NotImplementedError

    async def box_state(self, host: Host) -> BoxState:
        """Whether the box sleeps now, read without waking it: asked of every provider before every
        background connect and while a box is asleep. UNKNOWN when the provider cannot tell without waking
        it (then a sleepable box is left for the user's Connect). A provider that can tell but could not be read
        now raises `ProviderUnreadable` with why, in words (bounded in time; no other exception). Must never
        touch the box itself."""
        return BoxState.UNKNOWN

    async def read_idle_clock(self, host: Host) -> IdleClockReading | None:
        """The provider's idle clock for this box, or None when this provider cannot tell.

        The hook behind "is the keep-awake seen?" (docs/providers.md). An override must read the clock
        without waking the box and without the read itself counting as activity (a provider API or a
        status page, never a request through the box's metered path), and must not raise for an
        unreachable provider: return None. `read_at` is `time.monotonic()` when the answer arrived.
        """
        return None

    def state_words(self, host: Host) -> str | None:
        """Why the state read unknown, in the provider's words ("coder says: You are not logged in"), or None."""
        return None

    async def wake(self, host: Host) -> None:
        """The user asked to wake an asleep box, before the connect: here nothing (connecting wakes it); a
        platform runs its own start command and waits until the box runs."""
        return None

    async def platform_clock(self, host: Host) -> PlatformClock | None:
        """The platform's own clock for the box (its deadline, read from its list without touching the box), or
        None where the provider has none. Must not raise: an unreadable platform is a clock that says so."""
        return None

    def last_platform_clock(self, host: Host) -> PlatformClock | None:
        """The platform's clock as the last read of the box's state found it (None: no platform, or not read)."""
        return None

    async def extend_deadline(self, host: Host, until: float) -> None:
        """Ask the platform to move the box's deadline to `until` (Unix seconds). Raises a UserError in words
        when it cannot (the base: there is no such call)."""
        raise UserError("No extension", f"The {self.kind} provider has no deadline to extend.", "")

    async def list_boxes(self) -> list[tuple[str, str]]:
        """Every box the provider's own list names, (name, its state word), for the add-host picker: a platform's
        CLI list; none elsewhere. May raise when the list cannot be read (the picker then shows none)."""
        return []

    def forget_secret(self, request: SecretRequest) -> None:
        """Blocking: forget a stored secret the host refused (the app's keyring, through the context)."""
        if self.context.forget_secret is not None:
            self.context.forget_secret(request)

    async def poll_health(self, host: Host) -> PollOutcome:
        """One keep-awake request from outside the box (providers whose traits say it needs one: request
        metering). It counts as activity and says whether the box is still busy."""
        from workroom.core.keepawake import PollOutcome

        return PollOutcome.failed(f"the {self.kind} provider has no keep-awake request", retryable=False)
