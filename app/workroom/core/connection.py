"""Where a host's connection stands, as plain data the session publishes and the badge reads."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from workroom.core.errors import ErrorInfo, UserError
from workroom.core.heartbeat_proof import HeartbeatProof


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
    ERROR = "error"
    """Cannot connect until something changes (refused host key, no python3, bad credentials)."""


WAITING_STATES = frozenset(
    {ConnectionState.CONNECTING, ConnectionState.HOST_KEY_QUESTION, ConnectionState.PUSHING}
)
"""States in which we are on the way to knowing, but do not know yet."""
UNREACHABLE_STATES = frozenset({ConnectionState.LOST, ConnectionState.BACKING_OFF, ConnectionState.ERROR})
"""States in which we tried and cannot reach the host."""


class ConnectionInfo(BaseModel):
    """A snapshot of one host's connection. Times are this computer's monotonic clock."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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

    def with_state(
        self, state: ConnectionState, now_monotonic: float, *, error: UserError | ErrorInfo | None = None
    ) -> ConnectionInfo:
        """The next snapshot: a new state since `now_monotonic`, with the error (if any) replaced."""
        info = error.info() if isinstance(error, UserError) else error
        return self.model_copy(update={"state": state, "since_monotonic": now_monotonic, "error": info})

    def retrying(self, now_monotonic: float) -> ConnectionInfo:
        """CONNECTING again after a failure: the last error stays until the attempt succeeds."""
        return self.model_copy(update={"state": ConnectionState.CONNECTING, "since_monotonic": now_monotonic})
