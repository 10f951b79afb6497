"""The app's engine, with no Qt: the hosts, their sessions, the ceiling settings and their fan-out.

The desktop app and the CLI are two faces of this one object; while the app runs, the `workroom` command is
served by the app's engine (docs/app_link.md). It owns persistence (hosts.json, settings.json,
last_verdicts.json) and hands every host's session this computer's ceiling settings (ask mode only to hosts
whose provider sleeps when idle).

Every write is a locked read-modify-write of the file (storage.py): a change is applied to what the file holds
now, so another process's change is never written over, and what the file then holds becomes the engine's.
A change found in a file (another process, a hand edit: `reload_changed_files`) is taken the same way. Either
way the faces hear of it through `hosts_listeners` and `settings_listeners`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import replace
from typing import Any

from workroom.agent_bundle import AgentBundle
from workroom.core.app_settings import AppSettings, NoticeSettings
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionInfo
from workroom.core.errors import UserError
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host, HostsFile
from workroom.core.last_known import LastKnown
from workroom.core.protocol import Method
from workroom.core.setting_rows import Store
from workroom.credentials import CredentialKey, CredentialStore
from workroom.daemon_threads import DaemonThreads
from workroom.paths import AppPaths
from workroom.providers import make_provider
from workroom.providers.agent_keys import SETTLE_WAIT_SECONDS, AgentKeys
from workroom.providers.agent_sockets import AgentSockets
from workroom.providers.base import Provider, ProviderContext
from workroom.remote.agent_install import UninstallReport
from workroom.remote.host_keys import KnownHosts
from workroom.sessions.engine_changes import HostsChange, SettingsChange, changed_rows, host_changes, row_store
from workroom.sessions.host_session import HostSession
from workroom.sessions.known_book import KnownBook
from workroom.sessions.secret_lookup import SecretAsker, keyring_secret_lookup
from workroom.sessions.uninstall import uninstall_agent
from workroom.storage import (
    load_hosts,
    load_settings,
    read_hosts,
    read_settings,
    update_hosts,
    update_settings,
)

log = logging.getLogger(__name__)


SettingsChangeFn = Callable[[AppSettings], AppSettings]


class Engine:
    def __init__(self, paths: AppPaths, bundle: AgentBundle, *, hostname: str | None = None,
                 auto_reconnect: bool = True, credentials: CredentialStore | None = None,
                 agent_keys_this_run_only: bool = False) -> None:
        self.paths = paths.ensure()
        self.hostname = hostname
        loaded_hosts = load_hosts(paths, hostname)
        loaded_settings = load_settings(paths)
        self.problems: list[UserError] = [p for p in (loaded_hosts.problem, loaded_settings.problem) if p]
        self.hosts: HostsFile = loaded_hosts.value
        self.settings: AppSettings = loaded_settings.value
        self._settings_changes: list[SettingsChangeFn] = []
        """Changes made here and not yet written (`save_settings` applies them to the file as it is then)."""
        self._settings_writes = 0
        self.hosts_listeners: list[Callable[[HostsChange], None]] = []
        self.settings_listeners: list[Callable[[SettingsChange], None]] = []
        self._files = DaemonThreads("wr-files")
        """Writes of the engine's files off the loop's thread, one at a time in order (`close` waits for them)."""
        self._files_closed = False
        self._closing: dict[str, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.auto_reconnect = auto_reconnect
        self.credentials = credentials if credentials is not None else CredentialStore()
        self.secret_asker: SecretAsker | None = None
        """Set by a face that can ask the user for a passphrase (an async callable on the event loop)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        self.context = ProviderContext(bundle=bundle, known_hosts=KnownHosts(paths.known_hosts_file),
                                       state_dir=paths.state_dir, agent_sockets=AgentSockets(paths.state_dir),
                                       agent_keys=AgentKeys(self.credentials, this_run_only=agent_keys_this_run_only),
                                       secret_lookup=keyring_secret_lookup(self.credentials, self),
                                       forget_secret=lambda request: self.credentials.delete(CredentialKey.of(request)))
        self.sessions: dict[str, HostSession] = {}
        self.keyring_waiting = False
        """A keyring call has waited a while (a system dialog may be open): every connect on its way says so."""
        self.credentials.on_wait = self._keyring_wait
        self.listeners: list[Callable[[HostSnapshot], None]] = []
        self._providers: dict[str, Provider] = {}
        self.known = KnownBook(paths.state_dir, self._write)
        if loaded_hosts.problem is None and not paths.hosts_file.exists():
            self.hosts = update_hosts(paths, lambda hosts: hosts, hostname=hostname, fallback=self.hosts)

    # -- hosts -------------------------------------------------------------------------------------

    def provider_for(self, host: Host) -> Provider:
        return self.provider_of_kind(host.provider)

    def provider_of_kind(self, kind: str) -> Provider:
        if kind not in self._providers:
            self._providers[kind] = make_provider(kind, self.context)
        return self._providers[kind]

    def use_provider(self, provider: Provider) -> None:
        """Serve `provider.kind` hosts with this provider (tests use stand-ins for cloud providers)."""
        self._providers[provider.kind] = provider

    def session(self, name: str) -> HostSession:
        host = self.hosts.require(name)
        if self.loop is None:
            try:
                self.loop = asyncio.get_running_loop()
            except RuntimeError:
                pass
        session = self.sessions.get(host.name)
        if session is None:
            session = HostSession(host, self.provider_for(host), self.settings.ceiling,
                                  auto_reconnect=self.auto_reconnect,
                                  previous_verdict=self.last_verdicts.get(host.name))
            session.listeners.append(self._relay)
            self.sessions[host.name] = session
        return session

    def _keyring_wait(self, waiting: bool) -> None:
        """From a keyring call's thread: said on the loop, to every session on its way to connecting (any of them
        may be behind the keyring: the store answers one call at a time)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._show_keyring_wait, waiting)

    def _show_keyring_wait(self, waiting: bool) -> None:
        self.keyring_waiting = waiting
        for session in list(self.sessions.values()):
            session.waiting_for("the keyring" if waiting else None)

    def _relay(self, snapshot: HostSnapshot) -> None:
        info = snapshot.connection
        if self.keyring_waiting and info.spec.waiting and info.waiting_for is None and self.loop is not None:
            # a connect that began while the keyring waits may be behind it too: said next (after this snapshot)
            self.loop.call_soon(self.sessions[snapshot.host.name].waiting_for, "the keyring")
        self.known.remember(snapshot)
        snapshot = replace(snapshot, last_known=self.last_known(snapshot.host.name))
        for listener in list(self.listeners):
            listener(snapshot)

    # -- what is known of each host between runs and faces (sessions/known_book.py) -------------------------

    @property
    def last_verdicts(self) -> dict[str, dict[str, object]]:
        return self.known.records

    def last_known(self, name: str) -> LastKnown:
        """What the app last knew of a host (any face, any run: core.last_known). Read from last_verdicts.json,
        so a fresh CLI process has it too."""
        return self.known.of(name)

    def _write(self, write: Callable[[], object], failed: str) -> None:
        """Run a file write on the engine's writer thread (in order; fsync never on the loop's thread); with no
        loop running (a command's last words), here and now. A failure is logged."""
        def guarded() -> None:
            try:
                write()
            except OSError as error:
                log.warning("%s: %s", failed, error)

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            guarded()
            return
        if self._files_closed:  # a late word after `close`: written here and now
            guarded()
            return
        self._files.submit(guarded)

    def snapshots(self) -> list[HostSnapshot]:
        out = []
        for host in self.hosts.hosts:
            if host.name in self.sessions:
                snapshot = self.sessions[host.name].snapshot()
            else:
                snapshot = HostSnapshot(host, self.provider_for(host).traits(host), ConnectionInfo(), None, None)
            out.append(replace(snapshot, last_known=self.last_known(host.name)))
        return out

    def change_hosts(self, change: Callable[[HostsFile], HostsFile]) -> HostsChange:
        """`change` applied to hosts.json as it is now (locked: storage.update_hosts), and the result taken as the
        engine's hosts: raises what `change` raises (a UserError), or OSError when the file cannot be written;
        either way nothing changed. Another process's change found on the way is taken too."""
        hosts = update_hosts(self.paths, change, hostname=self.hostname, fallback=self.hosts)
        return self._take_hosts(hosts, outside=False)

    def add_host(self, host: Host) -> None:
        self.change_hosts(lambda hosts: hosts.add(host))

    def edit_host(self, name: str, changes: Mapping[str, Any]) -> Host:
        """Change only the fields named in `changes` of the host called `name` as it is stored now (checked as
        `HostsFile.edit` checks an edit: raises a UserError, or ValueError for a value the host cannot hold)."""
        def change(hosts: HostsFile) -> HostsFile:
            old = hosts.require(name)
            return hosts.edit(name, Host.model_validate({**old.model_dump(), **changes}))

        self.change_hosts(change)
        return self.hosts.require(name)

    def set_hourly_price(self, name: str, price: float | None) -> Host:
        """The provider's hourly price for this host (the timeline's estimated cost); its session goes on."""
        return self.edit_host(name, {"hourly_price": price})

    async def replace_host(self, name: str, host: Host, *, was: Host | None = None) -> None:
        """Change the host called `name` into `host` in one step: checked (`HostsFile.edit`: raises a
        UserError) and saved (raises OSError) before anything changes, so a refused edit loses nothing.
        With `was` (the host as the person was shown it) only the fields they changed are written, onto the
        host as it is stored now. Then the session made with the old settings ends; the next `session(name)`
        uses the new ones."""
        if was is not None:
            self.edit_host(name, host_changes(was, host))
        else:
            self.change_hosts(lambda hosts: hosts.edit(name, host))
        closing = self._closing.get(host.name)
        if closing is not None:
            await asyncio.shield(closing)

    def forget_host(self, name: str) -> None:
        """Remove the host from the list (its agent, if one runs there, keeps running), with what this computer
        remembers of it."""
        host = self.hosts.require(name)
        self.change_hosts(lambda hosts: hosts.remove(host.name))
        self.known.forget(host.name)

    def _forget_agent(self, name: str) -> None:
        """Forget where the host's agent was and its key (providers.agent_keys; from the context, so a host whose
        provider cannot be made goes all the same): the host was removed or edited, here or by another process,
        and whatever the name names next proves itself anew."""
        self._write(lambda: self.context.forget_agent(name), f"cannot forget {name}'s agent place and key")

    async def remove_host(self, name: str, *, uninstall: bool = False) -> UninstallReport | None:
        """Forget the host; with `uninstall`, first stop its agent and remove it from the box (asking for that
        is an explicit wake of an asleep box). An uninstall that fails raises its UserError and the host stays,
        so nothing is lost and it can be tried again (or the host removed without it)."""
        host = self.hosts.require(name)
        session = self.sessions.pop(host.name, None)
        if session is not None:
            await session.close()
        report = await self.uninstall_agent(host) if uninstall else None
        self.forget_host(host.name)
        closing = self._closing.get(host.name)
        if closing is not None:
            await asyncio.shield(closing)
        return report

    def _take_hosts(self, hosts: HostsFile, *, outside: bool) -> HostsChange:
        """Make `hosts` the engine's: a removed host's session ends, a changed one's ends too (the next connect
        uses the new settings) unless only its price changed; then the faces hear what changed."""
        change = HostsChange.between({h.name: h for h in self.hosts.hosts}, {h.name: h for h in hosts.hosts},
                                     outside=outside)
        self.hosts = hosts
        if not change:
            return change
        for name in (*change.removed, *(h.name for h in change.changed)):
            self._forget_agent(name)  # a price alone (`updated`) is not where or as whom: its agent goes on
            self._end_session(name)
        for host in change.updated:
            session = self.sessions.get(host.name)
            if session is not None:
                session.host = host
        for listener in list(self.hosts_listeners):
            listener(change)
        return change

    def _end_session(self, name: str) -> None:
        session = self.sessions.pop(name, None)
        if session is None:
            return
        try:
            task = asyncio.get_running_loop().create_task(session.close(), name=f"close-{name}")
        except RuntimeError:  # no loop (a command's last words): nothing of it runs any more
            return
        self._closing[name] = task
        task.add_done_callback(lambda done: self._closing.pop(name, None) if self._closing.get(name) is done
                               else None)

    async def uninstall_agent(self, host: Host, *, stop_only: bool = False) -> UninstallReport:
        """Stop the host's agent and remove it from the box (sessions/uninstall.py)."""
        return await uninstall_agent(self.provider_for(host), host, self.context, stop_only=stop_only)

    def this_computer(self) -> Host | None:
        """This computer's host entry, if it is one of the hosts."""
        return next((h for h in self.hosts.hosts if self.provider_for(h).spec.is_this_computer), None)

    # -- settings ----------------------------------------------------------------------------------

    def _change_settings(self, change: SettingsChangeFn) -> None:
        """Change the settings in memory now; `save_settings` applies the same change to the file as it is then."""
        before = self.settings
        self.settings = change(self.settings)
        self._settings_changes.append(change)
        self._settings_changed(before, outside=False)

    async def update_app_settings(self, **changes: object) -> None:
        """Save app state that is not a setting row (the first-run offer answered); raises OSError when the
        file cannot be written (the state stays changed in memory for this run)."""
        self._change_settings(lambda settings: settings.model_copy(update=changes))
        await self.save_settings()

    def change_settings(self, changes: Mapping[str, object]) -> None:
        """Take the settings a person changed (row name -> value; core.setting_rows), each checked by its row
        (raises `SettingsError`): only these change, every other setting keeps its stored value. `save_settings`
        writes them; `apply_settings` also hands the ceiling to the hosts."""
        self.settings.with_changes(changes)  # checked now: a refused value changes nothing
        self._change_settings(lambda settings: settings.with_changes(changes))

    async def apply_settings(self, changes: Mapping[str, object]) -> dict[str, UserError | None]:
        """Change (`change_settings`), save, and hand the ceiling settings to every connected host at once (the
        pane's Apply to all hosts; others get them when they connect). Returns each host's outcome."""
        self.change_settings(changes)
        await self.save_settings()
        return await self._hand_out_ceiling()

    async def _hand_out_ceiling(self) -> dict[str, UserError | None]:
        ceiling = self.settings.ceiling
        names = list(self.sessions)
        results = await asyncio.gather(*(self._hand_ceiling(self.sessions[n], ceiling) for n in names),
                                       return_exceptions=True)
        outcome: dict[str, UserError | None] = {}
        for name, result in zip(names, results, strict=True):
            if isinstance(result, UserError):
                outcome[name] = result
            elif isinstance(result, BaseException):
                outcome[name] = UserError("Settings not applied", f"{name}: {result}", "Reconnect and try again.")
            else:
                outcome[name] = None
        return outcome

    @staticmethod
    async def _hand_ceiling(session: HostSession, ceiling: CeilingSettings) -> None:
        """The session keeps the settings for its next connect, and a connected agent is handed them now (ask
        mode only where the provider sleeps; only the fields its own differ in)."""
        session.settings = ceiling
        if session.linked:
            reported = session.status.settings_values if session.status is not None else None
            await session.call(Method.SETTINGS, **ceiling.for_provider(session.traits).as_request_params(reported))

    def use_notice_settings(self, notices: NoticeSettings) -> None:
        """Which notifications this computer shows, from now on, with each host's own choice (nothing goes to the
        hosts); `save_settings` writes them. Only what differs from the notices held now is written over the
        file's."""
        before = self.settings.notices
        self._change_settings(lambda settings: settings.model_copy(
            update={"notices": notices.onto(before, settings.notices)}))

    async def save_settings(self) -> None:
        """Write the changes made here since the last save, each applied to settings.json as it is then (off the
        loop's thread; locked: storage.update_settings); raises OSError when it cannot be written. What the file
        then holds is taken, another process's changes included, unless more changes were made meanwhile."""
        changes, self._settings_changes = self._settings_changes, []
        if not changes:
            return

        def write() -> AppSettings:
            def change(settings: AppSettings) -> AppSettings:
                for one in changes:
                    settings = one(settings)
                return settings

            return update_settings(self.paths, change, fallback=self.settings)

        self._settings_writes += 1
        try:
            saved = write() if self._files_closed else await asyncio.wrap_future(self._files.submit(write))
        except BaseException:
            self._settings_changes[:0] = changes  # kept for the next save
            raise
        finally:
            self._settings_writes -= 1
        if not self._settings_writes and not self._settings_changes and saved != self.settings:
            before, self.settings = self.settings, saved
            self._settings_changed(before, outside=True)

    def _settings_changed(self, before: AppSettings, *, outside: bool) -> None:
        names = changed_rows(before, self.settings)
        if names:
            for listener in list(self.settings_listeners):
                listener(SettingsChange(names, outside))

    # -- files changed behind the engine's back ---------------------------------------------------------------

    def reload_changed_files(self) -> None:
        """Take what another process (an older `workroom`, a hand edit) wrote into the engine's files: the hosts,
        the settings (the ceiling handed to connected hosts when it changed), what is known of each host not
        heard live here, and the remembered agent places. A file that cannot be read now is left for later (a
        hand edit half done); it is never moved aside from here. Said in the log."""
        hosts = read_hosts(self.paths)
        if hosts is not None and hosts != self.hosts:
            change = self._take_hosts(hosts, outside=True)
            log.info("hosts.json changed outside the app: %s", change.words())
        settings = read_settings(self.paths)
        if settings is not None and settings != self.settings and not self._settings_changes \
                and not self._settings_writes:
            before, self.settings = self.settings, settings
            names = changed_rows(before, settings)
            log.info("settings.json changed outside the app: %s", ", ".join(sorted(names)) or "nothing it shows")
            self._settings_changed(before, outside=True)
            if any(row_store(name) is Store.AGENTS for name in names):
                self._schedule(self._hand_out_ceiling(), "ceiling")
        self.known.reload()
        if self.context.agent_sockets is not None:
            self.context.agent_sockets.forget_cached()

    def _schedule(self, work: Coroutine[Any, Any, object], what: str) -> None:
        try:
            task = asyncio.get_running_loop().create_task(work, name=what)
        except RuntimeError:
            work.close()
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sessions.values()), *self._closing.values(),
                             return_exceptions=True)
        keys = self.context.agent_keys
        if keys is not None and not await asyncio.to_thread(keys.settle):  # the keys' writes land before the run ends
            log.info("the keyring had not taken the agents' keys within %.0f s; the next run may ask the agents again",
                     SETTLE_WAIT_SECONDS)
        if not self._files_closed:
            await asyncio.wrap_future(self._files.submit(lambda: None))  # every write submitted before is done
            self._files_closed = True
            self._files.shutdown(wait=False)
