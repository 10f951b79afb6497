"""When a session's run ends, and when the next begins: the back-off between reconnects (longer than a sleepable
box's idle window after the first quick try), how often an asleep box is read again, the end of a run that no
reconnect follows (`EndOfRun`), and the words for a lost connection. Used by sessions/host_session.py."""

from __future__ import annotations

import logging
from typing import Any

from workroom.core.connection import ConnectionState
from workroom.core.errors import UserError
from workroom.core.hosts import Host
from workroom.core.protocol import Status, Verdict
from workroom.core.traits import ProviderTraits
from workroom.providers.base import BoxState, ProviderUnreadable
from workroom.remote.agent_link import plain_reason

log = logging.getLogger(__name__)

BACKOFF_SECONDS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
ASLEEP_RECHECK_SECONDS = 60.0
"""The longest wait between reads of an asleep box's state (the provider answers without waking it)."""
ASLEEP_RECHECK_MIN_SECONDS = 2.0


SLEEPABLE_RETRY_MARGIN_SECONDS = 10.0
"""How much longer than its idle window a sleepable box is left between our failed reconnects."""


def reconnect_delay(attempt: int, traits: ProviderTraits) -> float:
    """The wait before reconnect number `attempt` (0: the first after a loss). The back-off steps; on a box that
    sleeps, after the first quick try (which replaces a frozen agent before the box's window runs out), every
    further try waits longer than the box's idle window: each try is traffic that resets a network-metered
    box's idle clock, and a box we cannot serve must be able to sleep between them."""
    delay = BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)]
    if traits.metering.sleeps and attempt >= 1:
        window = traits.idle_window_seconds if traits.idle_window_seconds is not None else ASLEEP_RECHECK_SECONDS
        delay = max(delay, window + SLEEPABLE_RETRY_MARGIN_SECONDS)
    return delay


def asleep_recheck_seconds(idle_window_seconds: float | None) -> float:
    """A quarter of the idle window (2-60 s): a box woken outside the app (the user's own ssh) shows
    awake, and its job's badge, well before that window could send it back to sleep."""
    if idle_window_seconds is None:
        return ASLEEP_RECHECK_SECONDS
    return max(ASLEEP_RECHECK_MIN_SECONDS, min(ASLEEP_RECHECK_SECONDS, idle_window_seconds / 4))


class ConnectTimedOut(UserError, TimeoutError):
    """`connect()` waited its time and the host has not said how it is (the session keeps trying)."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__("No answer yet", f"{name} gave no status within {seconds:.0f} s.",
                         "The host may be slow or waking up; try again, or see its row for what it is doing.")


class EndOfRun(Exception):
    """A run ends here and no reconnect follows: the session settles in `state` (with `error`, if any).

    The box is asleep and this start may not wake it; a background connect to a sleepable box whose state
    cannot be read (it would wake it); or a failure reconnecting will not fix (an untrusted or changed host
    key, a refused login, any error that is not `retryable`: no Python on the host, an agent of another
    protocol)."""

    def __init__(self, state: ConnectionState, error: UserError | None = None, *, why: str) -> None:
        super().__init__(why)
        self.state = state
        self.error = error
        self.why = why

    @classmethod
    def asleep(cls) -> EndOfRun:
        return cls(ConnectionState.ASLEEP, why="asleep")

    @classmethod
    def fatal(cls, error: UserError) -> EndOfRun:
        return cls(ConnectionState.ERROR, error, why=str(error))


def run_failure(host: Host, failure: BaseException) -> UserError | EndOfRun:
    """What a run's failure means: the end of the runs (an EndOfRun, or an error the same again cannot change), or
    the error to say before the next try. A bug is logged and said in words, never as a Python error."""
    match failure:
        case EndOfRun():
            return failure
        case UserError(retryable=False):  # the same again cannot work: say so and stop knocking
            return EndOfRun.fatal(failure)
        case UserError():
            return failure
        case OSError() | TimeoutError() | EOFError():
            return lost_error(host, failure)
    log.error("session %s failed unexpectedly", host.name, exc_info=failure)
    return UserError("Something went wrong",  # what it was goes to the log, not to the user
                     f"An unexpected error stopped the connection to {host.name}.",
                     "The app will try again; if it repeats, report it with the app's log.")


def after_loss(box: object, *, sleeps: bool) -> EndOfRun | None:
    """A lost link, and the provider's word on the box since (`BoxState`, or `ProviderUnreadable`): the end of
    the runs where reconnecting could wake it or show it on a guess; None where a reconnect may be considered."""
    if isinstance(box, ProviderUnreadable) and sleeps:
        # It may have gone to sleep: never shown asleep or offline on a guess, and never reconnected to.
        return EndOfRun(ConnectionState.UNREADABLE, box, why="provider unreadable")
    if box is BoxState.ASLEEP:
        return EndOfRun.asleep()  # connecting again would wake it: that is the user's call
    return None


def under_running_job(status: Status | None, *, sleeps: bool) -> bool:
    """A box that went to sleep just now slept under a job of its span still running: its agent's last word saw
    work, kept awake or not (a prompt nobody answered, the ceiling reached, a keep-awake that failed) -- unless
    the user said Let it sleep, which is their answer, not lost work. The lost-work notice follows it (a box that
    freezes rather than stops resumes the job when it wakes)."""
    if not sleeps or status is None or status.let_sleep:
        return False
    return status.busy or status.classifier_verdict is Verdict.BUSY


def slept_while_busy(previous: dict[str, Any] | None, status: Status, *, sleeps: bool) -> bool:
    """The box slept (a tick gap the agent saw) while busy, after the app last saw it: the next start says
    so, because on a request-metered box nothing keeps it awake once the app quits (docs/providers.md)."""
    if not sleeps or not previous or previous.get("verdict") != "BUSY":
        return False
    seen_at = previous.get("agent_monotonic")
    if not isinstance(seen_at, int | float):
        return False
    if status.monotonic < seen_at:
        return True  # the box restarted (its clock began again) since the app saw it busy
    gap = status.last_gap
    return gap is not None and gap.busy_before and gap.at > seen_at


def lost_error(host: Host, error: BaseException | str) -> UserError:
    """Why a live connection ended (an exception, or the link's own words), as the user sees it: the words
    only (an exception's type goes to the log), and no dangling ": ." when there are none."""
    if isinstance(error, BaseException):
        log.info("the connection to %s ended: %s: %s", host.name, type(error).__name__, error)
    words = plain_reason(str(error))
    return UserError(
        "Lost the host",
        f"The connection to {host.name} ended: {words}." if words else f"The connection to {host.name} ended.",
        "The app reconnects on its own when the host is reachable again.",
    )
