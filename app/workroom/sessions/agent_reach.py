"""How a session reaches its host's agent, once it has a shell: four ways, tried in this order.

1. Straight to the socket where the agent listened at the last connect (`_direct_link`): no command on the
   host; kept only if the agent there proves who it is and says hello as this app's build, not stalled. The
   install probe then runs after the first status (`check_installed`).
2. Over SSH, one command that probes and becomes the relay (`_probe_then_relay`): one round trip after the
   login when nothing needs to change.
3. Otherwise the probe's answer says what to change: push, hand off or start, then a relay of its own
   (`_push_then_relay`).
4. This computer, whose agent has no relay command: its socket opened while the install runs, kept only
   when nothing changed (`_local_link`).

docs/protocol.md (transport) says why each is safe: nothing runs from the host's disk before its hash is
checked. Every way ends with the link greeted (`hello`) and the answer to a `subscribe` sent on it with a fresh
challenge, which the agent answers with its key (remote/agent_proof.py): a link whose agent cannot prove who it
is is not kept, and nothing it pushed reaches the session (its events are held until `trust`). The key comes
from the app's keyring, or from the install probe's answer over SSH when the agent's differs. The link being
set up is handed to the session (`hold`) as soon as it exists, so a session torn down mid-way closes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TypeAlias

from workroom.core.ceiling import CeilingSettings
from workroom.core.errors import UserError
from workroom.core.hosts import Host
from workroom.core.install_report import InstallReport
from workroom.core.protocol import PromptEvent, ProtocolError, Status, StatusEvent
from workroom.providers.base import Provider
from workroom.remote.agent_install import AgentInstaller, AgentInstallError, Probe
from workroom.remote.agent_link import AgentLink, PreambleError, plain_reason
from workroom.remote.agent_proof import AgentNotProven, key_id, new_challenge, proves
from workroom.remote.host_shell import ExecResult, HostShell
from workroom.sessions.blocking_runner import BlockingRunner

log = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 30.0
"""How long the probe's answer may take (as long as the probe run on its own may)."""
RELAY_HELLO_SECONDS = 5.0
"""How long the agent behind a relay may take to say hello (it answers at once): past this it holds its lock and
says nothing, frozen, and is replaced."""
KEYRING_WAIT_SECONDS = 2.0
"""How long a connect waits for the keyring to give the agent's key: past it (its unlock dialog may be open for as
long as the person leaves it) the connect goes the install probe's way, which asks the agent for its key."""
DIRECT_HELLO_SECONDS = 5.0
"""How long the agent at a remembered socket may take to say hello (it answers at once; past this the probe
decides)."""

Reached: TypeAlias = tuple[AgentLink, Status]
"""A greeted link whose agent proved who it is, and its answer to the `subscribe` that asked it to."""


class AgentReach:
    """One host's ways to its agent (see the module's docstring), for its session. `install` is what the last
    install step found or did (the session's `install`); `direct` whether this connect's link went straight
    to the socket."""

    def __init__(self, host: Host, provider: Provider, runner: BlockingRunner,
                 on_event: Callable[[StatusEvent | PromptEvent], None], hold: Callable[[AgentLink | None], None],
                 clock: Callable[[], float]) -> None:
        self.host = host
        self.provider = provider
        self._runner = runner
        self._on_event = on_event
        self._hold = hold
        self._clock = clock
        self.install: InstallReport | None = None
        self.direct = False
        self.skip_direct = False
        """The next connect goes the probe's way at once: the agent at the remembered socket was just found
        frozen (its hello would only be waited for in vain before the probe replaces it)."""
        self.binding = ""
        """What this connect's agent is remembered under (`Provider.agent_binding`)."""
        self._key: asyncio.Future[str | None] | None = None
        """The app's key for the agent (the keyring's, or the probe's once it gave one)."""
        self._start = 0.0
        self._phases: dict[str, float] = {}

    def frozen(self) -> None:
        """The agent stopped answering: the next reach does not knock on its remembered socket (the probe finds it
        frozen and replaces it)."""
        self.skip_direct = True

    async def reach(self, shell: HostShell, start: float, phases: dict[str, float]) -> Reached:
        """A live, greeted link to the agent, pushing it first if its hash differs (or starting it); `phases`
        gets the seconds from `start` to the install step's end and to the hello."""
        self.direct = False
        self._start, self._phases = start, phases
        self.binding = self.provider.agent_binding(self.host, shell)
        # The keyring is asked while the remembered socket opens: the key is wanted only with its answer.
        self._key = asyncio.ensure_future(asyncio.to_thread(self.provider.agent_key, self.host, self.binding))
        self._key.add_done_callback(lambda f: f.cancelled() or f.exception())
        layout = self.provider.layout(self.host)
        installer = self.installer(shell)
        # No key that could prove an agent there (none kept, or a command run without the app): no knock.
        skip = self.skip_direct or not self.provider.may_hold_agent_key(self.host, self.binding)
        direct = None if skip else await self._direct_link(shell)
        self.skip_direct = False
        if direct is not None:
            return direct
        installer.key_id = key_id(await self._held_key())
        if self.provider.relay_argv(self.host, layout.socket_path) is not None:  # a relay over a command
            probed = await self._probe_then_relay(shell, installer)
            if isinstance(probed, tuple):
                await self._remember_agent()
                return probed
            # The probe said what to change (or said nothing usable: then it runs again on its own, and says
            # why in its own words): change it, then a relay of its own -- never one before the probe.
            return await self._push_then_relay(shell, installer, probed)
        return await self._local_link(shell, installer, layout.socket_path)

    def installer(self, shell: HostShell) -> AgentInstaller:
        return AgentInstaller(shell, self.provider.context.agent_bundle(), self.provider.layout(self.host),
                              self.provider.serve_options(self.host), self.provider.python_command(self.host))

    def _mark(self, phase: str) -> None:
        self._phases[phase] = self._clock() - self._start

    def _subscribe(self, link: AgentLink) -> tuple[str, asyncio.Future[Status]]:
        """Send `subscribe` now, with a fresh challenge (the agent's proof rides on its answer)."""
        challenge = new_challenge()
        subscribed = asyncio.ensure_future(link.client.subscribe(challenge=challenge))
        subscribed.add_done_callback(lambda f: f.cancelled() or f.exception())  # unused when no relay follows
        return challenge, subscribed

    async def _proven(self, link: AgentLink, socket_path: str, challenge: str, status: Status,
                      key: str | None) -> Status:
        """`status` (the answer to `subscribe`) if its proof answers `challenge` with `key`: then the link is
        trusted (the events it held go to the session); else AgentNotProven, and nothing it said is used."""
        if not proves(key, challenge, status.proof):
            raise AgentNotProven(socket_path, self.host.name)
        link.client.trust()
        return status.model_copy(update={"proof": None})

    async def _direct_link(self, shell: HostShell) -> Reached | None:
        """A reconnect with no command on the host: a stream straight to the socket where the agent listened at
        the last connect (`Provider.open_direct_link`), `subscribe` sent at once with a challenge. Kept only if
        the agent there proves who it is with the key the app holds, says hello as this app's build and is not
        stalled; else None, and the connect goes the probe's way (which checks the folders and the installed
        bundle, asks for the agent's key, and pushes, hands off or restarts as needed). Nothing runs from the
        host's disk here: the bundle's hash is checked wherever it is started (docs/protocol.md)."""
        assert self._key is not None
        opened = await self.provider.open_direct_link(self.host, shell, self.binding, self._on_event)
        if opened is None:
            return None
        link, place = opened
        self._hold(link)
        challenge, subscribed = self._subscribe(link)
        bundle = self.provider.context.agent_bundle()
        keep = False
        try:
            hello = await link.client.hello(timeout=DIRECT_HELLO_SECONDS)
            if hello.build != bundle.sha256:
                log.info("the agent at %s on %s is another build: probing", place.socket, self.host.name)
                return None
            self._mark("hello")
            key = await self._held_key()
            if key is None:  # none kept (no usable keyring, say): the probe's way asks the agent for it
                log.info("no key for the agent of %s: probing", self.host.name)
                return None
            try:
                status = await self._proven(link, place.socket, challenge, await subscribed, key)
            except AgentNotProven:
                log.warning("the agent at %s on %s did not prove who it is: forgetting that place and probing",
                            place.socket, self.host.name)
                await self._runner.run(self.provider.remember_agent, self.host, self.binding, None)
                return None
            if status.stalled:
                log.info("the agent on %s has stalled: probing", self.host.name)
                return None
            self.install = InstallReport(installed_version=bundle.version, socket_path=place.socket,
                                         bundle_path=place.bundle, supervisor=place.supervisor)
            self._phases["install"] = self._phases["hello"]
            keep = self.direct = True
            return link, status
        except (UserError, ProtocolError, OSError, TimeoutError, EOFError) as failed:
            log.info("the agent's socket on %s did not answer as this build (%s): probing", self.host.name,
                     getattr(failed, "message", None) or failed)
            return None
        finally:
            if not keep:  # closing fails the subscribe still waiting (a cancel first would orphan its reply)
                link.close("replaced")
                self._hold(None)

    async def check_installed(self, shell: HostShell, link: AgentLink) -> None:
        """After a direct reconnect, the install probe as every other connect runs it (the installed bundle's
        sha256, its folders, the host's Python), off the path to the first status. All well: nothing more.
        Anything to change (the installed file is not this build's, an unsafe folder, ...): the remembered
        socket is forgotten and the link closed, and the reconnect that follows goes the probe's way, which
        changes it (or says why it cannot) as a first connect would."""
        installer = self.installer(shell)
        assert self._key is not None and self.install is not None
        installer.key_id = key_id(await self._held_key())
        try:
            probe = await self._runner.run(installer.probe)
            why = ("the agent installed on the host needs changing" if not installer.relay_follows(probe) else
                   "the agent's key on the host is not the one it proved itself with" if probe.key_differs else
                   f"the agent's socket is now {probe.socket_path}" if probe.socket_path != self.install.socket_path
                   else None)
        except AgentInstallError as error:
            why = plain_reason(error.message)
        except (UserError, OSError, TimeoutError):
            return  # the connection's own trouble: its loss is noticed and reported where it always is
        if why is None or link.closed.done():
            return
        log.info("%s: %s; reconnecting through the install probe", self.host.name, why)
        await self._runner.run(self.provider.remember_agent, self.host, self.binding, None)
        link.close(why)

    async def _remember_agent(self) -> None:
        """Where the agent is now, for the next connect's `_direct_link` (a file write only on a change), and its
        key when the probe gave a new one (a keyring write)."""
        assert self._key is not None
        await self._runner.run(self.provider.remember_agent, self.host, self.binding, self.install, await self._key)

    async def _held_key(self) -> str | None:
        """The key the app holds for the agent, as far as the keyring answers within KEYRING_WAIT_SECONDS; None
        past it (and the keyring's answer is not waited for again in this connect: the probe gives the key)."""
        assert self._key is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._key), KEYRING_WAIT_SECONDS)
        except TimeoutError:
            log.info("%s: the keyring has not answered in %.0f s (its unlock dialog may be open): asking the agent "
                     "for its key instead", self.host.name, KEYRING_WAIT_SECONDS)
            self._key = asyncio.get_running_loop().create_future()
            self._key.set_result(None)
            return None

    async def _key_from(self, probe: Probe | None) -> str | None:
        """The app's key for the agent, after `probe`'s answer: the agent's own when the probe said the app's
        was not it."""
        assert self._key is not None
        if probe is not None and probe.key_differs:
            self._key = asyncio.get_running_loop().create_future()
            self._key.set_result(probe.key)
        return await self._key

    async def _probe_then_relay(self, shell: HostShell, installer: AgentInstaller) -> Reached | Probe | None:
        """A reconnect in one round trip after login: one command probes (the installed bundle's sha256 is
        checked first) and, when nothing needs to change, becomes the relay on the same stream. `subscribe`
        is sent at once with a challenge, so the agent's hello and its proof follow the probe's answer without
        waiting for us (the answer carries the agent's key when the app's is not it). Returns the live link and
        the agent's answer; else the probe (a push, hand-off or restart is needed first); else None when the
        command said nothing usable (the probe on its own then says why, in the same words as ever)."""
        link = await self.provider.open_probed_link(self.host, shell, installer.probe_then_relay_command(),
                                                    self._on_event)
        self._hold(link)
        assert link.preamble is not None
        challenge, subscribed = self._subscribe(link)
        keep = False
        try:
            try:
                answer = await asyncio.wait_for(asyncio.shield(link.preamble), PROBE_TIMEOUT_SECONDS)
            except TimeoutError:
                raise AgentInstallError(
                    "Could not read the host",
                    f"The probe of the host gave no answer within {PROBE_TIMEOUT_SECONDS:.0f} s.",
                    "Check that the host's shell works for this user.") from None
            except PreambleError as ended:
                if ended.too_long:
                    raise AgentInstallError(
                        "Could not read the host", f"The probe of the host failed: {ended.why}.",
                        "Make the host's shell start-up files print nothing for a command "
                        "(e.g. only when the shell is interactive), then connect again.") from None
                log.info("the probe-then-relay command on %s ended early (%s): probing on its own",
                         self.host.name, ended.why)
                return None
            probe = installer.read_probe(ExecResult(0, answer, b""))
            if not installer.relay_follows(probe):
                return probe
            self._mark("install")
            # The running agent's build and whether it stalled, from the relay's own stream (the probe did not
            # ask: that took it a module and a round trip of its own); a hand-off or restart comes first if so.
            try:
                hello = await link.client.hello(timeout=RELAY_HELLO_SECONDS)
            except ProtocolError as other:
                log.info("the agent on %s answered the relay in another protocol (%s): probing on its own",
                         self.host.name, other.code)
                return None
            except TimeoutError:  # it holds its lock and says nothing: frozen; only replacing it helps
                log.info("the agent on %s did not say hello within %.0f s: replacing it", self.host.name,
                         RELAY_HELLO_SECONDS)
                return replace(probe, running_frozen=True)
            self._mark("hello")
            status = await subscribed
            probe = replace(probe, running_build=hello.build, running_stalled=status.stalled)
            if not installer.agent_is_current(probe):
                return probe
            status = await self._proven(link, probe.socket_path, challenge, status, await self._key_from(probe))
            install = self.install = await self._runner.run(installer.ensure, probe)  # nothing to do: no command
            if install.action != "none":  # one rule on both sides makes this impossible; never trust it anyway
                return probe
            keep = True
            return link, status
        finally:
            if not keep:  # closing fails the subscribe still waiting (a cancel first would orphan its reply)
                link.close("replaced")
                self._hold(None)

    async def _push_then_relay(self, shell: HostShell, installer: AgentInstaller, probe: Probe | None) -> Reached:
        """Push, hand off or start as `probe` says (None: probe again first), then a relay of its own, whose
        agent proves who it is."""
        install = self.install = await self._runner.run(installer.ensure, probe)
        key = await self._key_from(installer.last_probe)
        self._mark("install")
        after = await self.provider.open_link(self.host, shell, install.socket_path, self._on_event)
        self._hold(after)
        challenge, subscribed = self._subscribe(after)
        await after.client.hello()
        self._mark("hello")
        status = await self._proven(after, install.socket_path, challenge, await subscribed, key)
        await self._remember_agent()
        return after, status

    async def _local_link(self, shell: HostShell, installer: AgentInstaller, socket_path: str) -> Reached:
        """This computer (no relay command: its socket): open the link while the probe runs, and keep it only
        if the probe finds nothing to change."""
        early = asyncio.ensure_future(self.provider.open_link(self.host, shell, socket_path, self._on_event))
        try:
            install = self.install = await self._runner.run(installer.ensure)
        except BaseException:
            early.add_done_callback(_close_link_quietly)
            raise
        key = await self._key_from(installer.last_probe)
        self._mark("install")
        link = None
        if install.action == "none":
            try:
                link = await early
                await link.client.hello()
            except (UserError, OSError, TimeoutError, EOFError):
                if link is not None:
                    link.close("replaced")
                link = None
        else:
            early.add_done_callback(_close_link_quietly)
        if link is None:
            link = await self.provider.open_link(self.host, shell, install.socket_path, self._on_event)
            self._hold(link)
            await link.client.hello()
        self._hold(link)
        self._mark("hello")
        challenge, subscribed = self._subscribe(link)
        status = await self._proven(link, install.socket_path, challenge, await subscribed, key)
        await self._remember_agent()
        return link, status


def _close_link_quietly(future: asyncio.Future[AgentLink]) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().close("not needed")


async def hand_settings(link: AgentLink, subscribed: Status, wanted: CeilingSettings) -> Status:
    """The agent's answer to the subscribe (its proof checked), or, where its own ceiling settings differ from this
    computer's (`wanted`, for its provider) or it could not take them, its answer to being handed them."""
    if wanted.differs_from(subscribed.settings_values) or subscribed.settings_error is not None:
        return await link.client.settings(wanted, reported=subscribed.settings_values)
    return subscribed
