"""The app's engine, with no Qt: the hosts, their sessions, the ceiling settings and their fan-out.

The desktop app and the CLI are two faces of this one object. It owns persistence (hosts.json,
settings.json) and hands every host's session this computer's ceiling settings (ask mode only to hosts
whose provider sleeps when idle).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from workroom.agent_bundle import AgentBundle
from workroom.core.app_settings import AppSettings, NoticeSettings
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.errors import UserError
from workroom.core.hosts import Host, HostsFile
from workroom.core.last_known import LastKnown
from workroom.core.questions import SecretRequest
from workroom.credentials import CredentialKey, CredentialStore
from workroom.paths import AppPaths
from workroom.providers import make_provider
from workroom.providers.agent_sockets import AgentSockets
from workroom.providers.base import Provider, ProviderContext
from workroom.regular_file import read_regular_file
from workroom.remote.agent_install import UninstallReport
from workroom.remote.host_keys import KnownHosts
from workroom.sessions.host_session import HostSession, HostSnapshot
from workroom.storage import (
    MAX_FILE_BYTES,
    atomic_write_bytes,
    load_hosts,
    load_settings,
    save_hosts,
    save_settings,
)

log = logging.getLogger(__name__)


SecretAsker = Callable[[SecretRequest], Coroutine[Any, Any, str | None]]
"""Asks the user for a secret the keyring does not have (a coroutine run on the event loop)."""
ASK_SECRET_TIMEOUT_SECONDS = 300.0


def keyring_secret_lookup(store: CredentialStore,
                          engine: Engine | None = None) -> Callable[[SecretRequest], str | None]:
    """SSH passphrases and passwords come only from the keyring (runs on the host's worker thread).

    Nothing stored: the face's `secret_asker` (the desktop app's passphrase dialog) is asked on the event
    loop, and the answer is kept in the keyring (a wrong one is deleted when the host refuses it); with no
    asker, None (the login fails saying a passphrase was needed; `workroom secret set` stores one). No usable
    keyring: its error is raised — never a plaintext fallback, and the answer is not used unsaved."""

    def lookup(request: SecretRequest) -> str | None:
        key = CredentialKey.of(request)
        stored = store.get(key)
        if stored is not None or engine is None or engine.secret_asker is None or engine.loop is None:
            return stored
        asked = asyncio.run_coroutine_threadsafe(engine.secret_asker(request), engine.loop)
        answer = asked.result(timeout=ASK_SECRET_TIMEOUT_SECONDS)
        if answer:
            store.set(key, answer)
        return answer or None

    return lookup


class Engine:
    def __init__(self, paths: AppPaths, bundle: AgentBundle, *, hostname: str | None = None,
                 auto_reconnect: bool = True, credentials: CredentialStore | None = None) -> None:
        self.paths = paths.ensure()
        loaded_hosts = load_hosts(paths, hostname)
        loaded_settings = load_settings(paths)
        self.problems: list[UserError] = [p for p in (loaded_hosts.problem, loaded_settings.problem) if p]
        self.hosts: HostsFile = loaded_hosts.value
        self.settings: AppSettings = loaded_settings.value
        self.auto_reconnect = auto_reconnect
        self.credentials = credentials if credentials is not None else CredentialStore()
        self.secret_asker: SecretAsker | None = None
        """Set by a face that can ask the user for a passphrase (an async callable on the event loop)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        self.context = ProviderContext(bundle=bundle, known_hosts=KnownHosts(paths.known_hosts_file),
                                       state_dir=paths.state_dir, agent_sockets=AgentSockets(paths.state_dir),
                                       secret_lookup=keyring_secret_lookup(self.credentials, self),
                                       forget_secret=lambda request: self.credentials.delete(CredentialKey.of(request)))
        self.sessions: dict[str, HostSession] = {}
        self.listeners: list[Callable[[HostSnapshot], None]] = []
        self._providers: dict[str, Provider] = {}
        self.last_verdicts: dict[str, dict[str, object]] = self._load_verdicts()
        self._heard_live: set[str] = set()
        if loaded_hosts.problem is None and not paths.hosts_file.exists():
            save_hosts(paths, self.hosts)

    # -- hosts -------------------------------------------------------------------------------------

    def provider_for(self, host: Host) -> Provider:
        if host.provider not in self._providers:
            self._providers[host.provider] = make_provider(host.provider, self.context)
        return self._providers[host.provider]

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

    def _relay(self, snapshot: HostSnapshot) -> None:
        self._remember_verdict(snapshot)
        snapshot = replace(snapshot, last_known=self.last_known(snapshot.host.name))
        for listener in list(self.listeners):
            listener(snapshot)

    # -- the last verdict seen per host (so the next start can say a box was suspended while busy) ------

    @property
    def _verdicts_file(self) -> Path:
        return self.paths.state_dir / "last_verdicts.json"

    def _load_verdicts(self) -> dict[str, dict[str, object]]:
        try:
            raw = read_regular_file(self._verdicts_file, MAX_FILE_BYTES)  # never waits on a FIFO in the file's place
            if len(raw) > MAX_FILE_BYTES:
                raise ValueError("too large")
            data = json.loads(raw)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError):
            log.warning("ignoring an unreadable %s", self._verdicts_file)
            return {}
        if not isinstance(data, dict):
            return {}
        records = {k: LastKnown.from_record(v) for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}
        return {k: known.to_record() for k, known in records.items() if known.known or known.asleep_since is not None}

    def last_known(self, name: str) -> LastKnown:
        """What the app last knew of a host (any face, any run: core.last_known). Read from last_verdicts.json,
        so a fresh CLI process has it too."""
        return LastKnown.from_record(self.last_verdicts.get(name))

    def _remember_verdict(self, snapshot: HostSnapshot) -> None:
        """Keep the one record of what is known (core.last_known): written when what a face would say changes,
        and when the host stops being heard live (so the next run's "N min ago" is right)."""
        name = snapshot.host.name
        before = self.last_known(name)
        now = time.time()
        spec = snapshot.connection.spec
        after = before
        if snapshot.connection.state is ConnectionState.ASLEEP:
            after = before.asleep(now)
        elif spec.live and snapshot.status is not None:
            after = before.seen(snapshot.status, now)
        heard_before = name in self._heard_live
        if spec.live:
            self._heard_live.add(name)
        else:
            self._heard_live.discard(name)
        if after == before:
            return
        self.last_verdicts[name] = after.to_record()
        if not before.differs_in_meaning(after) and not (heard_before and not spec.live):
            return  # only a newer "seen at" while live: in memory now, on disk when it stops being heard
        self._save_verdicts()

    def _save_verdicts(self) -> None:
        data, path = json.dumps(self.last_verdicts).encode(), self._verdicts_file

        def save() -> None:
            try:
                atomic_write_bytes(path, data)
            except OSError as error:
                log.warning("cannot save %s: %s", path, error)

        try:
            asyncio.get_running_loop().run_in_executor(None, save)  # fsync never on the loop (GUI) thread
        except RuntimeError:
            save()

    def snapshots(self) -> list[HostSnapshot]:
        out = []
        for host in self.hosts.hosts:
            if host.name in self.sessions:
                snapshot = self.sessions[host.name].snapshot()
            else:
                snapshot = HostSnapshot(host, self.provider_for(host).traits(host), ConnectionInfo(), None, None)
            out.append(replace(snapshot, last_known=self.last_known(host.name)))
        return out

    def add_host(self, host: Host) -> None:
        self.hosts = self.hosts.add(host)
        save_hosts(self.paths, self.hosts)

    async def replace_host(self, name: str, host: Host) -> None:
        """Change the host called `name` into `host` in one step: checked (`HostsFile.edit`: raises a
        UserError) and saved (raises OSError) before anything changes, so a refused edit loses nothing.
        Then the session made with the old settings ends; the next `session(name)` uses the new ones."""
        hosts = self.hosts.edit(name, host)
        save_hosts(self.paths, hosts)
        self.hosts = hosts
        session = self.sessions.pop(host.name, None)
        if session is not None:
            await session.close()

    async def remove_host(self, name: str, *, uninstall: bool = False) -> UninstallReport | None:
        """Forget the host; with `uninstall`, first stop its agent and remove it from the box (asking for that
        is an explicit wake of an asleep box). An uninstall that fails raises its UserError and the host stays,
        so nothing is lost and it can be tried again (or the host removed without it)."""
        host = self.hosts.require(name)
        session = self.sessions.pop(host.name, None)
        if session is not None:
            await session.close()
        report = await self.uninstall_agent(host) if uninstall else None
        self.hosts = self.hosts.remove(host.name)
        save_hosts(self.paths, self.hosts)
        self.last_verdicts.pop(host.name, None)
        if self.context.agent_sockets is not None:  # its agent's place too (a provider that cannot be made
            await asyncio.to_thread(self.context.agent_sockets.remember, host.name, None)  # is removed all the same)
        return report

    async def uninstall_agent(self, host: Host, *, stop_only: bool = False) -> UninstallReport:
        """Stop the host's agent the way it was started and remove its unit, plist, bundle and state
        (`stop_only`: keep them; the next connect starts it again)."""
        provider = self.provider_for(host)

        def work() -> UninstallReport:
            shell = provider.open_shell(host)
            try:
                report = provider.installer(host, shell).uninstall(stop_only=stop_only)
                provider.remember_agent(host, None)
                return report
            finally:
                shell.close()

        return await asyncio.get_running_loop().run_in_executor(None, work)

    def this_computer(self) -> Host | None:
        """This computer's host entry, if it is one of the hosts."""
        return next((h for h in self.hosts.hosts if self.provider_for(h).spec.is_this_computer), None)

    # -- settings ----------------------------------------------------------------------------------

    async def update_app_settings(self, **changes: object) -> None:
        """Save app state that is not a setting row (the first-run offer answered); raises OSError when the
        file cannot be written (the state stays changed in memory for this run)."""
        self.settings = self.settings.model_copy(update=changes)
        await self.save_settings()

    def change_settings(self, changes: Mapping[str, object]) -> None:
        """Take the settings a person changed (row name -> value; core.setting_rows), each checked by its row
        (raises `SettingsError`): only these change, every other setting keeps its stored value. `save_settings`
        writes them; `apply_settings` also hands the ceiling to the hosts."""
        self.settings = self.settings.with_changes(changes)

    async def apply_settings(self, changes: Mapping[str, object]) -> dict[str, UserError | None]:
        """Change (`change_settings`), save, and hand the ceiling settings to every connected host at once (the
        pane's Apply to all hosts; others get them when they connect). Returns each host's outcome."""
        self.change_settings(changes)
        await self.save_settings()
        ceiling = self.settings.ceiling
        names = list(self.sessions)
        results = await asyncio.gather(*(self.sessions[n].apply_settings(ceiling) for n in names),
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

    def use_notice_settings(self, notices: NoticeSettings) -> None:
        """Which notifications this computer shows, from now on, with each host's own choice (nothing goes to the
        hosts); `save_settings` writes them."""
        self.settings = self.settings.model_copy(update={"notices": notices})

    async def save_settings(self) -> None:
        """Write the settings as they are now (off the loop's thread)."""
        await asyncio.get_running_loop().run_in_executor(None, save_settings, self.paths, self.settings)

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sessions.values()), return_exceptions=True)
