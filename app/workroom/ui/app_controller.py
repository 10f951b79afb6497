"""The one object views talk to: it owns the engine, turns its listener calls into Qt signals and runs
every action (connect, keep, add, remove, settings) as a task on the qasync loop.

Views render what the controller hands them and call its methods; they never reach a session or the
network themselves (the UI only renders state the core computed: docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, assert_never, cast

from pydantic import BaseModel
from PySide6.QtCore import QObject, Signal

from workroom.core.app_settings import NoticeSettings
from workroom.core.connection import ConnectAction, ConnectionInfo, ConnectionState
from workroom.core.errors import Face, UserError
from workroom.core.exception_names import without_exception_names
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.prompt_answers import AnswerFace
from workroom.core.protocol import AgentCall, Method
from workroom.core.provider_specs import PROVIDER_SPECS
from workroom.core.questions import HostKeyQuestion, SecretRequest
from workroom.core.setting_rows import Store, rows_in
from workroom.sessions.engine import Engine
from workroom.sessions.engine_changes import HostsChange, SettingsChange
from workroom.sessions.host_session import HostSession
from workroom.ui.tasks import TaskKeeper

log = logging.getLogger(__name__)
UNREACHED: Mapping[Method, tuple[str, str]] = {
    Method.KEEP: ("Keep awake did not reach the host", "Check the connection; the card stays until the host answers."),
    Method.LET_SLEEP: ("Let it sleep did not reach the host",
                       "Check the connection; unanswered, the prompt still lets it sleep at its deadline."),
}
"""What a method that did not reach its host says (title, what to do); others say UNREACHED_OTHER."""
UNREACHED_OTHER = ("The host did not answer", "Check the connection and try again.")

WAKE_AND_TEST_WORDS = "Wake and test"
"""The dialog's test button once the box may be asleep (ui.host_dialog.WAKE_AND_TEST is the same words)."""

HostKeyPrompter = Callable[[str, HostKeyQuestion], Awaitable[bool]]
SecretPrompter = Callable[[SecretRequest], Awaitable[str | None]]
"""(host name, question with .host .port .key_type .fingerprint) -> trust?"""


class AppController(QObject):
    snapshot_changed = Signal(object)
    """A HostSnapshot, on every change of any host (the Qt thread: qasync runs asyncio there)."""
    host_added = Signal(object)
    host_removed = Signal(str)
    host_uninstalled = Signal(str, str)
    """(host name, what the uninstall did in words): the host was removed and its agent with it."""
    failed = Signal(object)
    """A UserError from an action the user started, to be shown."""
    settings_applied = Signal(object)
    """{host name: UserError | None} after new ceiling settings went out."""
    settings_failed = Signal(object)
    """A UserError: the settings could not be saved."""
    local_settings_changed = Signal()
    """This computer's settings changed: notifications, the idle-sleep hold, the terminal (in memory at once;
    saved in the background)."""
    stored_settings_changed = Signal(object)
    """The row names (a frozenset) whose stored value changed: here, from the command line, or in the file."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine
        self.tasks = TaskKeeper(self._task_failed)
        self.host_key_prompter: HostKeyPrompter | None = None
        self.secret_prompter: SecretPrompter | None = None
        """async (request) -> str | None: asks the user for a passphrase the keyring does not have."""
        self._taking_locally = False
        """A change of this computer's settings made here is in hand (`_taken_locally` says so itself)."""
        self._added_quietly: set[str] = set()
        """Hosts being added with `connect=False`: not connected when the engine says they were added."""
        engine.secret_asker = self._ask_secret
        engine.listeners.append(self._relay)
        engine.hosts_listeners.append(self._hosts_changed)
        engine.settings_listeners.append(self._settings_changed)

    # -- state ------------------------------------------------------------------------------------

    @property
    def problems(self) -> list[UserError]:
        return list(self.engine.problems)

    def setting_values(self) -> dict[str, Any]:
        """Every stored setting row's value, by name (the system's own, open at login, is read by the pane)."""
        return {row.name: self.engine.settings.value_of(row)
                for row in rows_in(Store.AGENTS, Store.NOTICES, Store.THIS_COMPUTER)}

    @property
    def notice_settings(self) -> NoticeSettings:
        return self.engine.settings.notices

    def host_names(self) -> list[str]:
        return self.engine.hosts.names()

    def snapshots(self) -> list[HostSnapshot]:
        """Every host's snapshot; a host whose provider cannot be made shows as an error, not a crash."""
        out = []
        for host in self.engine.hosts.hosts:
            try:
                out.append(self._session(host.name).snapshot())
            except UserError as error:
                out.append(_unreachable(host, error))
        return out

    def _relay(self, snapshot: HostSnapshot) -> None:
        self.snapshot_changed.emit(snapshot)

    def _hosts_changed(self, change: HostsChange) -> None:
        """The engine's hosts changed (here, through the command line, or in hosts.json): a removed host's row
        goes, an added or changed one shows and connects (waking none), a new price shows."""
        for name in change.removed:
            self.host_removed.emit(name)
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False  # not started yet: the app's start connects every host
        for host in (*change.added, *change.changed):
            self.host_added.emit(self._snapshot_of(host))
            if host.name not in self._added_quietly and running:
                self.connect_host(host.name, wake=False, unknown=True)
        for host in change.updated:
            self.snapshot_changed.emit(self._snapshot_of(host))

    def _settings_changed(self, change: SettingsChange) -> None:
        self.stored_settings_changed.emit(change.names)
        local = {row.name for row in rows_in(Store.NOTICES, Store.THIS_COMPUTER)}
        if change.names & local and not self._taking_locally:  # a command through the app, or the file
            self.local_settings_changed.emit()

    def _session(self, name: str) -> HostSession:
        session = self.engine.session(name)
        if session.host_key_answerer is None:
            session.host_key_answerer = self._answer_host_key
        return session

    async def _ask_secret(self, request: SecretRequest) -> str | None:
        if self.secret_prompter is None:
            return None
        return await self.secret_prompter(request)

    async def _answer_host_key(self, session: HostSession, question: HostKeyQuestion) -> bool:
        if self.host_key_prompter is None:
            return False
        return await self.host_key_prompter(session.host.name, question)

    def _task_failed(self, name: str, error: BaseException) -> None:
        if isinstance(error, UserError):
            self.failed.emit(error)
            return
        log.error("action %s failed", name, exc_info=error)
        action = name.split(":", 1)[0]
        subject = name.split(":", 1)[1] if ":" in name else ""
        about = f" for {subject}" if subject else ""
        self.failed.emit(UserError("Something went wrong", f"The {action} action{about} failed unexpectedly.",
                                   f"Try again; if it repeats, report it with the app's log (details: {error})."))

    # -- actions ----------------------------------------------------------------------------------

    def connect_host(self, name: str, *, wake: bool = False, unknown: bool | None = True) -> None:
        """Connect in the background (and keep reconnecting); progress arrives as snapshots.

        Only `wake` (the user's "Wake and connect") wakes a box its provider says is asleep; without it the
        row shows Asleep and the button becomes "Wake and connect". `unknown`: whether a sleepable box whose
        state cannot be read is connected to (default yes, as the user asked; Connect all says no).
        """
        try:
            self._session(name).start(wake=wake, unknown=unknown)
        except UserError as error:
            self.failed.emit(error)

    def connect_clicked(self, name: str) -> None:
        """The user's Connect, Wake and connect or Retry now (detail panel, row menu, tray submenu): every face
        labels the control from the state's row (`ConnectionSpec.connect`), and this does what the label said:
        it wakes exactly when it said "Wake and connect" (the box asleep)."""
        try:
            action = self._session(name).connection.spec.connect
        except UserError as error:
            self.failed.emit(error)
            return
        match action:
            case ConnectAction.WAKE:
                self.connect_host(name, wake=True)
            case ConnectAction.RETRY:
                self.retry_now(name)
            case ConnectAction.CONNECT:
                self.connect_host(name, wake=False)
            case ConnectAction.NONE:
                pass
            case _:
                assert_never(action)

    def connect_all(self) -> list[str]:
        """Connect every host that is not asleep, waking none; returns the names of those left asleep.

        Waking a box costs money and is the user's call for that one box ("Wake and connect"); a
        sleepable box whose state is unknown is not woken either (its session says so).
        """
        asleep: list[str] = []
        for snapshot in self.snapshots():
            if snapshot.connection.spec.asleep:
                asleep.append(snapshot.host.name)
                continue
            self.connect_host(snapshot.host.name, wake=False, unknown=False)
        return asleep

    def retry_now(self, name: str) -> None:
        """Skip the back-off wait: end the waiting session and connect again (never waking a sleeping box)."""
        session = self._session(name)

        async def retry() -> None:
            await session.disconnect()
            session.start(wake=False)

        self.tasks.run(f"retry:{name}", retry())

    def disconnect_host(self, name: str) -> None:
        self.tasks.run(f"disconnect:{name}", self._session(name).disconnect())

    def agent(self, name: str) -> AgentCall:
        """Ask `name`'s agent (`HostSession.call`): an answer to a prompt is the window's unless `face=` says whose.
        A host that cannot be reached raises a UserError in the method's words (`UNREACHED`), when awaited (the host
        is looked up then: one removed meanwhile fails in the task that asks, never in the button's slot)."""

        async def call(method: Method, /, *, face: AnswerFace = AnswerFace.WINDOW, **params: Any) -> BaseModel:
            try:
                return await self._session(name).call(method, face=face, **params)
            except UserError:
                raise
            except (OSError, TimeoutError, EOFError) as error:
                title, hint = UNREACHED.get(method, UNREACHED_OTHER)
                raise UserError(title, f"{name}: {error}.", hint) from None

        return cast(AgentCall, call)

    def add_host(self, host: Host, *, connect: bool = True) -> None:
        """Save a new host (raises DuplicateHostError) and start connecting to it.

        Adding a host is not asking to wake it: a box its provider says is asleep shows Asleep (with "Wake
        and connect"); one whose state cannot be read is connected to, as the user adding it expects.
        """
        if not connect:
            self._added_quietly.add(host.name)
        try:
            self.engine.add_host(host)  # the engine says so: `_hosts_changed` shows it and connects
        finally:
            self._added_quietly.discard(host.name)

    def _snapshot_of(self, host: Host) -> HostSnapshot:
        try:
            return self._session(host.name).snapshot()
        except UserError as error:
            return _unreachable(host, error)

    async def platform_boxes(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """What each provider's own list names (a platform's CLI: `coder list`, `gh codespace list`), for the
        add-host picker; a list that cannot be read (no CLI, not logged in) names none, and the log says why."""
        async def one(kind: str) -> tuple[str, list[tuple[str, str]]]:
            try:
                return kind, await self.engine.provider_of_kind(kind).list_boxes()
            except Exception as error:  # the picker only misses those boxes; nothing to show a person
                log.info("the %s provider's list could not be read: %s", kind, without_exception_names(str(error)))
                return kind, []

        found = await asyncio.gather(*(one(kind) for kind in PROVIDER_SPECS))
        return [(kind, boxes) for kind, boxes in found if boxes]

    async def test_connection(self, host: Host, *, wake: bool = False) -> TestOutcome:
        """Log in to `host` once through its provider and close again (nothing saved, no agent pushed).

        Off the GUI thread (paramiko blocks). A box its provider says is asleep is not logged in to unless
        `wake` (the dialog's "Wake and test"). A host key new to this computer is asked about first (the same
        question as connecting; trusted only on a yes), and then the login is tried: "reached" means logged in.
        """
        from workroom.providers.base import BoxState, ProviderUnreadable
        from workroom.remote.host_keys import HostKeyUnknown

        provider = self.engine.provider_for(host)
        if not wake:  # every provider answers without touching the box (UNKNOWN when it cannot tell)
            why = "its provider cannot tell without waking it"
            try:
                state = await provider.box_state(host)
            except ProviderUnreadable as unreadable:
                state, why = BoxState.UNKNOWN, f"its provider could not be read ({unreadable.message.rstrip('.')})"
            except Exception:
                log.exception("reading the state of %s failed", host.name)
                state = BoxState.UNKNOWN
            keeps = "Saving the host does not need the test."
            if state is BoxState.ASLEEP:
                return TestOutcome(False, f"{host.name} is asleep (its provider says so), so it was not tested: "
                                   f"logging in would wake it. Click {WAKE_AND_TEST_WORDS} to wake it. {keeps}",
                                   asleep=True)
            if state is BoxState.UNKNOWN and host.traits.metering.sleeps:
                return TestOutcome(False, f"{host.name} may be asleep ({why}), so it was not tested: logging in "
                                   f"would wake it if it is. Click {WAKE_AND_TEST_WORDS} to test it anyway. {keeps}",
                                   asleep=True)

        if provider.connects_only_when_awake:  # a platform's tunnel starts whatever is not running right now
            try:
                state = await provider.box_state(host)
                if state is BoxState.ASLEEP and wake:
                    await provider.wake(host)
                elif state is not BoxState.AWAKE:
                    return TestOutcome(False, f"{host.name} was not tested: {provider.state_words(host)}. Connecting "
                                       "now could start it.")
            except UserError as error:
                return TestOutcome(False, f"{error.title}: {error.message} {error.advice(Face.APP)}".strip())

        def attempt() -> None:
            provider.open_shell(host).close()

        trusted = ""
        try:
            for _ in range(2):
                try:
                    await asyncio.get_running_loop().run_in_executor(None, attempt)
                    break
                except HostKeyUnknown as unknown:
                    if trusted or self.host_key_prompter is None:
                        raise
                    question = unknown.question
                    if not await self.host_key_prompter(host.name, question):
                        return TestOutcome(False, f"Reached {host.connect_address}, but its host key "
                                           f"({question.fingerprint}) was not trusted, so the login was not tried.")
                    known = provider.context.known_hosts
                    assert known is not None
                    await asyncio.get_running_loop().run_in_executor(None, known.trust_answer, question)
                    trusted = f" Its new host key ({question.fingerprint}) is now trusted."
        except HostKeyUnknown as unknown:
            return TestOutcome(False, f"Reached {host.connect_address}, but its host key "
                               f"({unknown.question.fingerprint}) is new to this computer and nobody was asked about "
                               "it, so the login was not tried.")
        except UserError as error:
            return TestOutcome(False, f"{error.title}: {without_exception_names(error.message)} "
                               f"{error.advice(Face.APP)}".strip())
        except (OSError, TimeoutError, EOFError) as error:
            log.info("test connection to %s failed", host.name, exc_info=error)
            return TestOutcome(False, f"Could not reach {host.connect_address}: "
                               f"{without_exception_names(str(error))}")
        except Exception as error:
            log.error("test connection to %s failed unexpectedly", host.name, exc_info=error)
            return TestOutcome(False, f"Could not reach {host.connect_address}; the app's log has the details.")
        return TestOutcome(True, f"Reached {host.connect_address} and logged in.{trusted}")

    def edit_host(self, name: str, host: Host, *, was: Host | None = None) -> None:
        """Save changed settings of the host called `name` (`host`: all of it, the fields the dialog does
        not show included) and connect with them; its old session ends. With `was` (the host the dialog was
        opened with) only the fields the person changed are written, so a change made meanwhile elsewhere (the
        command line) stays.

        The engine checks and saves the change before anything else happens: one it refuses, or that
        cannot be saved, is shown (`failed`) and the host stays as it was, on disk and in the window.
        """
        async def edit() -> None:
            try:
                await self.engine.replace_host(name, host, was=was)
            except UserError as error:
                self.failed.emit(error)
                return
            except OSError as error:
                self.failed.emit(UserError("Changes not saved", f"{name}: {error}",
                                           "Check that the settings folder is writable; the host is unchanged."))
            except ValueError as error:  # a value the host cannot hold (the dialog checks them first)
                self.failed.emit(UserError("Changes not saved", f"{name}: {error}", "The host is unchanged."))

        self.tasks.run(f"edit:{name}", edit())

    def remove_host(self, name: str, *, uninstall: bool = False) -> None:
        """Forget the host; with `uninstall` (an explicit wake of an asleep box: the user asked), first stop its
        agent and remove it from the box. An uninstall that cannot be done keeps the host and says why."""
        async def remove() -> None:
            try:
                report = await self.engine.remove_host(name, uninstall=uninstall)
            except UserError as error:
                self.failed.emit(UserError(f"{name} not removed: {error.title}",
                                           f"{error.message} Its agent may still be running there.",
                                           "Try again when the host is reachable, or remove it without "
                                           "uninstalling (its agent then keeps running there)."))
                return
            if report is not None:
                self.host_uninstalled.emit(name, report.words())

        self.tasks.run(f"remove:{name}", remove())

    def apply_settings(self, changes: Mapping[str, object]) -> None:
        """Apply to all hosts: take the rows the person changed (only those), save, and hand the ceiling
        settings to every connected host; `settings_applied` says how each took them."""
        async def apply() -> None:
            try:
                outcome = await self.engine.apply_settings(changes)
            except UserError as error:
                self.settings_failed.emit(error)
                return
            except OSError as error:
                self.settings_failed.emit(UserError("Settings not saved", str(error),
                                                    "Check that the settings folder is writable."))
                return
            self.settings_applied.emit(outcome)

        self.tasks.run("settings", apply())

    def change_setting(self, name: str, value: object) -> None:
        """One of this computer's settings, from now on (in memory at once), and saved (a failure is shown)."""
        self._taking_locally = True
        try:
            self.engine.change_settings({name: value})
        except UserError as error:
            self.settings_failed.emit(error)
            return
        finally:
            self._taking_locally = False
        self._taken_locally()

    def apply_notice_settings(self, notices: NoticeSettings) -> None:
        """Use these notification settings (with each host's own choice) from now on, and save them."""
        if notices == self.engine.settings.notices:
            return
        self._taking_locally = True
        try:
            self.engine.use_notice_settings(notices)
        finally:
            self._taking_locally = False
        self._taken_locally()

    def _taken_locally(self) -> None:
        self.local_settings_changed.emit()

        async def save() -> None:  # whatever the settings are when it runs: a later change is never undone
            try:
                await self.engine.save_settings()
            except OSError as error:
                self.settings_failed.emit(UserError("Settings not saved", str(error),
                                                    "Check that the settings folder is writable."))

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop running (a test toggling a box by hand): save when the loop runs
            asyncio.get_event_loop().create_task(save())
            return
        self.tasks.run("local-settings", save(), supersede=False)

    def set_finished_notice(self, name: str, wanted: bool, *, this_computer: bool) -> None:
        """The host's own "tell me when its work finishes" (this computer's is a setting of its own)."""
        notices = self.notice_settings
        if this_computer:
            notices = notices.model_copy(update={"finished_this_computer": wanted})
            if wanted:
                notices = notices.with_finished_for(name, True)  # and not muted by name either
        else:
            notices = notices.with_finished_for(name, wanted)
        self.apply_notice_settings(notices)

    def set_hourly_price(self, name: str, price: float | None) -> None:
        """Save the provider's hourly price for this host (the timeline's estimated cost)."""
        try:
            self.engine.set_hourly_price(name, price)  # a session goes on with it; its row shows it
        except OSError as error:
            self.failed.emit(UserError("Price not saved", str(error), "Check that the settings folder is writable."))
        except UserError as error:
            self.failed.emit(error)

    def save_app_settings(self, **changes: object) -> None:
        """Save app state that is not a setting row (the open-at-login offer answered)."""
        async def save() -> None:
            try:
                await self.engine.update_app_settings(**changes)
            except OSError as error:
                self.failed.emit(UserError("Setting not saved", str(error),
                                           "Check that the settings folder is writable."))

        self.tasks.run("app-settings", save())

    async def close(self) -> None:
        await self.tasks.cancel_all()
        for listeners, listener in ((self.engine.listeners, self._relay),
                                    (self.engine.hosts_listeners, self._hosts_changed),
                                    (self.engine.settings_listeners, self._settings_changed)):
            if listener in listeners:
                listeners.remove(listener)  # type: ignore[arg-type]
        await self.engine.close()


class TestOutcome(NamedTuple):
    """What Test connection found: logged in or not, in words, and whether the box was found asleep (then the
    dialog offers Wake and test)."""

    ok: bool
    words: str
    asleep: bool = False


def _unreachable(host: Host, error: UserError) -> HostSnapshot:
    info = ConnectionInfo(state=ConnectionState.ERROR, error=error.info())
    return HostSnapshot(host, host.traits, info, None, None)
