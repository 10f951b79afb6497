"""Where a host's connection stands, as plain data the session publishes and the badge reads.

Each state is one row of `CONNECTION_SPECS` (its words, whether it is live, waiting, unreachable or settled,
what Connect offers and whether Disconnect applies): the window, the detail panel, the tray, the notices and
the CLI read the row, never a set of their own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from workroom.core.errors import ErrorInfo, UserError
from workroom.core.heartbeat_proof import HeartbeatProof, IdleClockReading
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.platform_clock import PlatformClock


class ConnectionState(StrEnum):
    DISCONNECTED = "disconnected"
    """Not connected, and not trying (the user has not asked, or disconnected)."""
    CONNECTING = "connecting"
    HOST_KEY_QUESTION = "host_key_question"
    """Waiting for the user to trust an unknown host key."""
    PUSHING = "pushing"
    """Installing or updating the agent."""
    LIVE = "live"
    """Subscribed: status events arrive as they happen."""
    QUIET = "quiet"
    """Idle on a sleepable provider: nothing on the wire from us, so the provider's timer can run."""
    LOST = "lost"
    """The connection broke (or the peer froze) while we needed it."""
    BACKING_OFF = "backing_off"
    """Waiting before the next reconnect attempt."""
    ASLEEP = "asleep"
    """The provider says the box is asleep (read without waking it)."""
    UNREADABLE = "unreadable"
    """The provider could not be read (its daemon gone, its CLI failing): the box may be asleep, so nothing of
    ours connects to it unasked; the provider is read again now and then."""
    RELEASED = "released"
    """Idle where an open session is activity: the app let go of its session so the platform can stop the box,
    and watches the platform's list instead (core.metering, `session_while_idle`)."""
    ERROR = "error"
    """Cannot connect until something changes (refused host key, no python3, bad credentials)."""


class ConnectAction(StrEnum):
    """What the Connect control offers in a state (its words: `CONNECT_WORDS`)."""

    CONNECT = "connect"
    WAKE = "wake"
    """The box is asleep: connecting wakes it, and the control says so."""
    RETRY = "retry"
    """Lost: try again now instead of at the next back-off step."""
    NONE = "none"
    """Connected, or on the way: nothing to connect."""


CONNECT_WORDS: Mapping[ConnectAction, str] = MappingProxyType({
    ConnectAction.CONNECT: "Connect",
    ConnectAction.WAKE: "Wake and connect",
    ConnectAction.RETRY: "Retry now",
    ConnectAction.NONE: "",
})


@dataclass(frozen=True)
class ConnectionSpec:
    """One connection state, as every face reads it (docs/ui.md, "Words for each state")."""

    state: ConnectionState
    words: str
    """The row's and the detail panel's words for it."""
    live: bool = False
    """Subscribed: the agent's status arrives as it happens, and answers (Keep awake, a prompt) can travel."""
    waiting: bool = False
    """On the way to knowing, not there yet."""
    unreachable: bool = False
    """Tried, and cannot reach the host."""
    settled: bool = False
    """A connect that ends here did not find the box asleep (Connect all stops following it)."""
    connect: ConnectAction = ConnectAction.NONE
    disconnect: bool = False
    """Disconnect applies: the session is connected or trying (not while the host-key dialog is the way out)."""
    asleep: bool = False
    """The provider says the box sleeps: nothing of ours wakes it unasked, and the faces say since when."""
    retrying: bool = False
    """Lost, and a reconnect is due at `ConnectionInfo.retry_at_monotonic` (a person's connect goes now instead)."""
    quiet: bool = False
    """Live and silent on the wire on purpose (a sleepable box's idle): nothing is asked of its agent unprompted."""
    counted: str = "not connected"
    """How the tray's summary counts a host in this state ("1 live · 2 asleep"): a box asleep or let go on purpose
    is counted as such, never as a host that failed to be live."""


    @property
    def may_be_asleep(self) -> bool:
        """Asleep, or it may be (its provider could not be read): connecting may wake it, and is asked for."""
        return self.connect is ConnectAction.WAKE


CONNECTION_SPECS: Mapping[ConnectionState, ConnectionSpec] = MappingProxyType({spec.state: spec for spec in (
    ConnectionSpec(ConnectionState.DISCONNECTED, "Not connected", connect=ConnectAction.CONNECT),
    ConnectionSpec(ConnectionState.CONNECTING, "Connecting…", waiting=True, disconnect=True, counted="connecting"),
    # The host-key dialog is the way to say no (Cancel): no second way out beside it.
    ConnectionSpec(ConnectionState.HOST_KEY_QUESTION, "Waiting for you to trust its key", waiting=True,
                   counted="connecting"),
    ConnectionSpec(ConnectionState.PUSHING, "Installing the agent…", waiting=True, disconnect=True,
                   counted="connecting"),
    ConnectionSpec(ConnectionState.LIVE, "Live", live=True, settled=True, disconnect=True, counted="live"),
    ConnectionSpec(ConnectionState.QUIET, "Live (quiet while idle)", live=True, settled=True, disconnect=True,
                   counted="live", quiet=True),
    ConnectionSpec(ConnectionState.LOST, "Lost", unreachable=True, settled=True, connect=ConnectAction.RETRY,
                   disconnect=True, counted="lost"),
    ConnectionSpec(ConnectionState.BACKING_OFF, "Lost, retrying", unreachable=True, settled=True,
                   connect=ConnectAction.RETRY, disconnect=True, counted="lost", retrying=True),
    ConnectionSpec(ConnectionState.ASLEEP, "Asleep", connect=ConnectAction.WAKE, counted="asleep", asleep=True),
    # It may be asleep: connecting may wake it, and the control says so.
    ConnectionSpec(ConnectionState.UNREADABLE, "Could not read the provider", settled=True,
                   connect=ConnectAction.WAKE, counted="unreadable"),
    ConnectionSpec(ConnectionState.RELEASED, "Let go while idle (its platform's list is watched)",
                   settled=True, connect=ConnectAction.CONNECT, disconnect=True, counted="let go while idle"),
    ConnectionSpec(ConnectionState.ERROR, "Cannot connect", unreachable=True, settled=True,
                   connect=ConnectAction.CONNECT, counted="cannot connect"),
)})
"""Every connection state's row (a test checks each state has one)."""


WAITING_STATES = frozenset(s for s, spec in CONNECTION_SPECS.items() if spec.waiting)
UNREACHABLE_STATES = frozenset(s for s, spec in CONNECTION_SPECS.items() if spec.unreachable)


def waiting_words(what: str) -> str:
    """What a connect waits on outside the app, in a person's words (`ConnectionInfo.waiting_for`): "waiting for the
    keyring (a system dialog may be open)"."""
    return f"waiting for {what} (a system dialog may be open)"


REPLACED_SHOWN_SECONDS = 600.0
"""How long the faces say an agent was replaced, after the connect that replaced it."""


class AgentReplaced(BaseModel):
    """The app replaced this host's agent on a connect: at what time of day ("14:02", as this computer's clock
    said it then), when on this computer's monotonic clock (for how long it is said), and why, in words ("stopped
    answering")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at_clock: str
    at_monotonic: float
    why: str

    @classmethod
    def after(cls, action: object, at_clock: str, at_monotonic: float) -> AgentReplaced | None:
        """The replacement a connect's install step made (`REPLACED_ACTIONS`), or None where it replaced nothing."""
        why = REPLACED_ACTIONS.get(action) if isinstance(action, str) else None
        return None if why is None else cls(at_clock=at_clock, at_monotonic=at_monotonic, why=why)

    def shown(self, now_monotonic: float | None) -> bool:
        """Said for REPLACED_SHOWN_SECONDS after the replacement (without a time now: as of it, so said)."""
        return now_monotonic is None or 0 <= now_monotonic - self.at_monotonic <= REPLACED_SHOWN_SECONDS

    def words(self) -> str:
        """The tooltip's sentence: "The agent stopped answering; the app replaced it at 14:02"."""
        return f"The agent {self.why}; the app replaced it at {self.at_clock}."

    def note(self) -> str:
        """The short form beside a state's word: "agent replaced at 14:02"."""
        return f"agent replaced at {self.at_clock}"


REPLACED_ACTIONS: Mapping[str, str] = MappingProxyType({
    "replaced": "stopped answering", "restarted": "stopped checking"})
"""An install report's action that replaced a running agent (remote.agent_install), and why in words."""


class ConnectionInfo(BaseModel):
    """A snapshot of one host's connection. Times are this computer's monotonic clock."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def spec(self) -> ConnectionSpec:
        return CONNECTION_SPECS[self.state]

    state: ConnectionState = ConnectionState.DISCONNECTED
    since_monotonic: float | None = None
    """When the session entered `state`."""
    error: ErrorInfo | None = None
    """Why the last attempt failed (LOST, BACKING_OFF, ERROR), in a person's words."""
    retry_at_monotonic: float | None = None
    """When BACKING_OFF ends."""
    host_key_fingerprint: str | None = None
    """SHA256 fingerprint in question (HOST_KEY_QUESTION)."""
    status_received_monotonic: float | None = None
    """When the last status arrived; lets the badge estimate the agent's clock now."""
    wake_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """How long the last wake-on-connect took, when one was measured."""
    keepawake_running: bool = False
    """This computer's outside keep-awake (KeepAwake) is polling the host (request-metered)."""
    keepawake_error: str | None = None
    """Why this computer's keep-awake is failing or gave up."""
    suspended_while_busy: bool = False
    """The provider suspended the box while its agent last said BUSY (e.g. the app was not running)."""
    pushed_bytes: int | None = None
    heartbeat_proof: HeartbeatProof | None = None
    """Whether the provider's idle clock shows the keep-awake (None: not being judged now)."""
    idle_clock: IdleClockReading | None = None
    """The provider's idle clock, read once after an idle status came in (a box that sleeps, on a provider that
    can be read): when it will sleep (core.box_times). None while busy, or where nothing could be read."""
    agent_replaced: AgentReplaced | None = None
    """The last time a connect replaced the host's agent (it had stopped answering or checking)."""
    agent_silent_since: float | None = None
    """When the agent's last heartbeat report arrived, while the next one is overdue (it may be frozen: it is not
    keeping the box awake). None: reports arrive as due, or none are expected."""
    platform: PlatformClock | None = None
    """The platform's own clock for the box, as last read from its list (metering `sessions`)."""
    waiting_for: str | None = None
    """What a connect on its way waits on outside the app, said by every face ("the keyring": a system dialog
    may be open); None once it is not waiting (a state that is not `waiting` carries none)."""
    platform_not_kept: NotKeptAwakeReason | None = None
    """Why the app cannot keep this busy box up through its platform now (None: it can, or need not)."""
    platform_words: str | None = None
    """That reason in words (the platform's own, where it gave some)."""
    platform_note: str | None = None
    """What the app's last extension did beyond the plan ("30 min past the awake ceiling: the platform's
    minimum step"), for the row."""

    def with_state(
        self, state: ConnectionState, now_monotonic: float, *, error: UserError | ErrorInfo | None = None
    ) -> ConnectionInfo:
        """The next snapshot: a new state since `now_monotonic`, with the error (if any) replaced."""
        info = error.info() if isinstance(error, UserError) else error
        update: dict[str, object] = {"state": state, "since_monotonic": now_monotonic, "error": info}
        if not CONNECTION_SPECS[state].waiting:
            update["waiting_for"] = None
        return self.model_copy(update=update)

    def retrying(self, now_monotonic: float) -> ConnectionInfo:
        """CONNECTING again after a failure: the last error stays until the attempt succeeds."""
        return self.model_copy(update={"state": ConnectionState.CONNECTING, "since_monotonic": now_monotonic})
