"""The badge a host shows: one pure function from what the agent said, the provider's traits and
the connection, to a kind, a label and a plain-words tooltip (docs/ui.md "Words for each state").

"Busy but not kept awake" appears only on hosts that can sleep: on a host that never sleeps,
nothing needs keeping awake, so nothing there is alarming.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from workroom.core.busy_words import plain_reasons
from workroom.core.connection import UNREACHABLE_STATES, WAITING_STATES, ConnectionInfo, ConnectionState
from workroom.core.durations import format_duration
from workroom.core.heartbeat_proof import ProofState
from workroom.core.plain_errors import without_exception_names
from workroom.core.protocol import PROTOCOL_VERSION, Status, Verdict
from workroom.core.traits import ProviderTraits

MAX_REASONS_SHOWN = 3


class BadgeKind(StrEnum):
    IDLE = "idle"
    BUSY = "busy"
    BUSY_PAST_CEILING = "busy_past_ceiling"
    BUSY_NOT_KEPT_AWAKE = "busy_not_kept_awake"
    ASLEEP = "asleep"
    OFFLINE = "offline"
    UNKNOWN = "unknown"

    @property
    def severity(self) -> int:
        """Higher is worse; the tray icon shows the worst host."""
        return _SEVERITY[self]


_SEVERITY: dict[BadgeKind, int] = {
    BadgeKind.IDLE: 0,
    BadgeKind.ASLEEP: 1,
    BadgeKind.BUSY: 2,
    BadgeKind.UNKNOWN: 3,
    BadgeKind.OFFLINE: 4,
    BadgeKind.BUSY_PAST_CEILING: 5,
    BadgeKind.BUSY_NOT_KEPT_AWAKE: 6,
}
SEVERITY_ORDER: tuple[BadgeKind, ...] = tuple(sorted(BadgeKind, key=_SEVERITY.__getitem__))
"""Badge kinds from least to most alarming."""


def worst_badge_kind(kinds: Iterable[BadgeKind], default: BadgeKind = BadgeKind.UNKNOWN) -> BadgeKind:
    """The most alarming kind among `kinds` (`default` when there are none)."""
    return max(kinds, key=_SEVERITY.__getitem__, default=default)


class NotKeptAwakeReason(StrEnum):
    """Why a busy host that can sleep is not being kept awake."""

    UNANSWERED_PROMPT = "unanswered_prompt"
    STALLED_AGENT = "stalled_agent"
    HEARTBEAT_FAILING = "heartbeat_failing"
    HEARTBEAT_OFF = "heartbeat_off"
    HEARTBEAT_NOT_SENT = "heartbeat_not_sent"
    AGENT_TOO_OLD = "agent_too_old"
    WINDOW_TOO_SHORT = "window_too_short"
    OUTSIDE_KEEPAWAKE_NOT_RUNNING = "outside_keepawake_not_running"
    OUTSIDE_KEEPAWAKE_FAILING = "outside_keepawake_failing"
    PROVIDER_NOT_SEEING = "provider_not_seeing"
    SLEPT_WHILE_BUSY = "slept_while_busy"
    """Asleep, although its agent last said it was busy: the keep-awake did not hold (an ASLEEP badge)."""


class Badge(BaseModel):
    """What the UI shows for one host. `tooltip` is complete plain sentences, ending with what to do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: BadgeKind
    label: str
    tooltip: str
    offers_keep: bool = False
    """Show "Keep awake": a prompt is pending or the ceiling is exceeded."""
    reason: NotKeptAwakeReason | None = None
    hint: str = ""
    """What to do next, also the tooltip's last sentence (empty when nothing needs doing)."""


LABELS: dict[BadgeKind, str] = {
    BadgeKind.IDLE: "Idle",
    BadgeKind.BUSY: "Busy",
    BadgeKind.BUSY_PAST_CEILING: "Busy past ceiling",
    BadgeKind.BUSY_NOT_KEPT_AWAKE: "Busy but not kept awake",
    BadgeKind.ASLEEP: "Asleep",
    BadgeKind.OFFLINE: "Offline",
    BadgeKind.UNKNOWN: "Unknown",
}
KEPT_AWAKE_BY_THIS_COMPUTER = "kept awake by this computer"


def _make(
    kind: BadgeKind,
    sentences: Iterable[str],
    *,
    hint: str = "",
    offers_keep: bool = False,
    reason: NotKeptAwakeReason | None = None,
    label: str | None = None,
) -> Badge:
    parts = [s for s in sentences if s]
    if hint:
        parts.append(hint)
    return Badge(
        kind=kind,
        label=label or LABELS[kind],
        tooltip=" ".join(parts),
        offers_keep=offers_keep,
        reason=reason,
        hint=hint,
    )


def badge(
    status: Status | None,
    traits: ProviderTraits,
    connection: ConnectionInfo,
    *,
    now_monotonic: float | None = None,
) -> Badge:
    """The badge for one host. Pure: same inputs, same badge.

    `now_monotonic` (this computer's clock) lets the tooltip count down a pending prompt; without
    it the countdown is as of the last status.
    """
    state = connection.state
    if state is ConnectionState.ASLEEP:
        return _asleep(traits, connection)
    if state in UNREACHABLE_STATES:
        return _offline(connection)
    if state is ConnectionState.DISCONNECTED:
        return _make(BadgeKind.UNKNOWN, ["Not connected, so the app does not know what this host is doing."],
                     hint="Connect to see its state.")
    if state in WAITING_STATES:
        return _waiting(connection)
    if status is None:
        return _make(BadgeKind.UNKNOWN, ["Connected; waiting for the agent's first status."])
    result = _from_status(status, traits, connection, now_monotonic)
    if connection.suspended_while_busy:
        result = result.model_copy(update={"tooltip": f"{SUSPENDED_WHILE_BUSY} {result.tooltip}"})
    return result


SUSPENDED_WHILE_BUSY = (
    "The provider suspended this box although its agent last said it was busy: "
    "work on it may have been cut short."
)


def _asleep(traits: ProviderTraits, connection: ConnectionInfo) -> Badge:
    sentences = ["The provider has put this box to sleep."]
    reason = None
    hint = "Connecting wakes it."
    if connection.suspended_while_busy:
        reason = NotKeptAwakeReason.SLEPT_WHILE_BUSY
        sentences.append(
            "It was suspended while its agent still said it was busy, so work on it may have been cut short."
        )
        if traits.needs_outside_keep_awake:
            sentences.append("Only this computer keeps such a box awake, and only while the app runs.")
        hint = "Wake and connect to see what survived; check its keep-awake before starting long work again."
    if connection.wake_seconds is not None:
        sentences.append(f"Last wake took {connection.wake_seconds:.1f} s.")
    return _make(BadgeKind.ASLEEP, sentences, hint=hint, reason=reason)


def _offline(connection: ConnectionInfo) -> Badge:
    sentences = ["The app cannot reach this host."]
    backing_off = connection.state is ConnectionState.BACKING_OFF
    hint = "The app will keep trying." if backing_off else "Reconnect to try again."
    if connection.error is not None:
        sentences.append(f"{connection.error.title}: {without_exception_names(connection.error.message)}")
        if connection.error.hint:
            hint = connection.error.hint
    return _make(BadgeKind.OFFLINE, sentences, hint=hint)


def _waiting(connection: ConnectionInfo) -> Badge:
    if connection.state is ConnectionState.HOST_KEY_QUESTION:
        sentences = ["This host's key is new to this computer."]
        if connection.host_key_fingerprint:
            sentences.append(f"Its fingerprint is {connection.host_key_fingerprint}.")
        return _make(BadgeKind.UNKNOWN, sentences, hint="Check the fingerprint, then trust it or cancel.")
    if connection.state is ConnectionState.PUSHING:
        return _make(BadgeKind.UNKNOWN, ["Installing the agent on this host."])
    if connection.error is not None:
        # Retrying after a loss: still unreachable until this attempt succeeds.
        sentences = ["The app cannot reach this host; it is trying again now.",
                     f"{connection.error.title}: {without_exception_names(connection.error.message)}"]
        return _make(BadgeKind.OFFLINE, sentences, hint="The app will keep trying.")
    return _make(BadgeKind.UNKNOWN, ["Connecting."])


def _busy_sentence(status: Status) -> str:
    plain = plain_reasons(status.busy_reasons)
    reasons = plain[:MAX_REASONS_SHOWN]
    more = len(plain) - len(reasons)
    if not reasons:
        return "Busy."
    text = "Busy: " + "; ".join(reasons)
    if more > 0:
        text += f" (and {more} more)"
    return text + "."


def _agent_now(status: Status, connection: ConnectionInfo, now_monotonic: float | None) -> float:
    if now_monotonic is None or connection.status_received_monotonic is None:
        return status.monotonic
    return status.monotonic + max(0.0, now_monotonic - connection.status_received_monotonic)


def _ceiling_sentence(status: Status, connection: ConnectionInfo, now_monotonic: float | None) -> str:
    text = (
        f"It has been busy for {format_duration(status.awake_seconds)}, "
        f"past the {format_duration(status.ceiling_seconds)} awake ceiling"
    )
    if status.prompt_pending and status.prompt_deadline is not None:
        left = status.prompt_deadline - _agent_now(status, connection, now_monotonic)
        return text + f"; answer Keep awake within {format_duration(max(0.0, left))} or it will be let sleep."
    if status.prompt_pending:
        return text + "; the agent is asking whether to keep it awake."
    return text + "."


def _heartbeat_interval(status: Status, traits: ProviderTraits) -> float | None:
    if status.keep_awake is not None:
        return status.keep_awake.interval_seconds
    return traits.heartbeat_interval_seconds


def _window_too_short(status: Status, traits: ProviderTraits) -> tuple[float, float] | None:
    """(window, interval) when the idle window is under twice the heartbeat interval."""
    if not traits.agent_keeps_awake:
        return None
    window = traits.idle_window_seconds
    interval = _heartbeat_interval(status, traits)
    if window is None or interval is None or window >= 2 * interval:
        return None
    return window, interval


def _window_sentence(window: float, interval: float) -> str:
    return (
        f"Its idle window ({format_duration(window)}) is shorter than twice the heartbeat interval "
        f"(every {format_duration(interval)}), so it can fall asleep between heartbeats."
    )


def _not_kept_awake(
    status: Status, traits: ProviderTraits, connection: ConnectionInfo
) -> tuple[NotKeptAwakeReason, str, str] | None:
    """Why a busy, sleepable host is not being kept awake: (reason, sentence, hint), or None."""
    if traits.agent_keeps_awake:
        keep = status.keep_awake
        if keep is None or status.agent.protocol < PROTOCOL_VERSION:
            return (
                NotKeptAwakeReason.AGENT_TOO_OLD,
                "The agent on this host is too old to keep it awake.",
                "Reconnect so the app can update the agent.",
            )
        if not keep.enabled:
            return (
                NotKeptAwakeReason.HEARTBEAT_OFF,
                "The agent's heartbeat is switched off on this host, so nothing keeps it awake.",
                "Check the agent's keep-awake setting on this host.",
            )
        if keep.error:
            return (
                NotKeptAwakeReason.HEARTBEAT_FAILING,
                f"The agent's heartbeat is failing: {keep.error}.",
                "Check the host's network route; the agent keeps retrying.",
            )
        too_short = _window_too_short(status, traits)
        if too_short is not None:
            return (
                NotKeptAwakeReason.WINDOW_TOO_SHORT,
                _window_sentence(*too_short),
                "Make the idle window at least twice the heartbeat interval, or shorten the heartbeat.",
            )
        if status.asserting is False:
            return (
                NotKeptAwakeReason.HEARTBEAT_NOT_SENT,
                "The agent says it is busy but is not sending its heartbeat.",
                "Reconnect; if this stays, restart the agent.",
            )
        return _not_seen(connection)
    if traits.needs_outside_keep_awake:
        if connection.keepawake_error:
            return (
                NotKeptAwakeReason.OUTSIDE_KEEPAWAKE_FAILING,
                f"This computer is failing to keep it awake: {connection.keepawake_error}. "
                "Its provider counts only requests from outside the box.",
                "Check this computer's connection to the provider.",
            )
        if not connection.keepawake_running:
            return (
                NotKeptAwakeReason.OUTSIDE_KEEPAWAKE_NOT_RUNNING,
                "Nothing is keeping it awake: its provider counts only requests from outside the box, "
                "and this computer is not sending them.",
                "Keep the app running and connected while the work runs.",
            )
        return _not_seen(connection)
    return None


def _not_seen(connection: ConnectionInfo) -> tuple[NotKeptAwakeReason, str, str] | None:
    """The keep-awake is sent, but the provider's idle clock shows it is not counted (heartbeat_proof)."""
    proof = connection.heartbeat_proof
    if proof is None or proof.state is not ProofState.NOT_SEEN:
        return None
    return (
        NotKeptAwakeReason.PROVIDER_NOT_SEEING,
        proof.why,
        "Check that nothing on the box or its network drops the keep-awake; the provider will put it to sleep "
        "when its idle window runs out.",
    )


def _keeper_sentence(traits: ProviderTraits, status: Status) -> str:
    if traits.needs_outside_keep_awake:
        return (
            "Kept awake by this computer while the app runs; if the app quits, nothing keeps it awake "
            "and the provider suspends it after its idle window."
        )
    if traits.agent_keeps_awake:
        interval = _heartbeat_interval(status, traits)
        every = f" (every {format_duration(interval)})" if interval is not None else ""
        return f"Kept awake by the agent's heartbeat{every}."
    return ""


def _from_status(
    status: Status, traits: ProviderTraits, connection: ConnectionInfo, now_monotonic: float | None
) -> Badge:
    sleeps = traits.sleeps_when_idle
    offers_keep = status.prompt_pending or status.awake_ceiling_exceeded
    claims_busy = status.verdict is Verdict.BUSY or status.classifier_verdict is Verdict.BUSY

    if status.stalled:
        stalled = "The agent has stopped checking this host (no check for 30 s)"
        if sleeps and claims_busy:
            return _make(
                BadgeKind.BUSY_NOT_KEPT_AWAKE,
                [stalled + ", so it is not keeping the box awake and the box may fall asleep mid-work."],
                hint="Reconnect to restart the agent.",
                offers_keep=offers_keep,
                reason=NotKeptAwakeReason.STALLED_AGENT,
            )
        return _make(
            BadgeKind.UNKNOWN,
            [stalled + ", so what it last said may be out of date."],
            hint="Reconnect to restart the agent.",
            offers_keep=offers_keep,
        )

    if status.suppressed:
        ceiling = (
            f"It has been busy for {format_duration(status.awake_seconds)}, past the "
            f"{format_duration(status.ceiling_seconds)} awake ceiling, and nobody answered the prompt"
        )
        if sleeps:
            return _make(
                BadgeKind.BUSY_NOT_KEPT_AWAKE,
                [_busy_sentence(status), ceiling + ", so the agent stopped keeping it awake; "
                 "the provider will put it to sleep when its idle window runs out."],
                hint="Click Keep awake to keep it up.",
                offers_keep=True,
                reason=NotKeptAwakeReason.UNANSWERED_PROMPT,
            )
        return _make(
            BadgeKind.BUSY_PAST_CEILING,
            [_busy_sentence(status), ceiling + "; this host never sleeps, so the work goes on."],
            offers_keep=True,
        )

    if status.verdict is Verdict.IDLE:
        sentences = ["Idle: nothing running on it counts as work."]
        if connection.state is ConnectionState.QUIET:
            sentences.append("The app stays silent on the wire so the provider can let it sleep.")
        too_short = _window_too_short(status, traits) if sleeps else None
        if too_short is not None:
            sentences.append("Note: " + _window_sentence(*too_short))
        return _make(BadgeKind.IDLE, sentences, offers_keep=offers_keep)

    if sleeps:
        not_kept = _not_kept_awake(status, traits, connection)
        if not_kept is not None:
            reason, sentence, hint = not_kept
            extra = [_ceiling_sentence(status, connection, now_monotonic)] if offers_keep else []
            return _make(
                BadgeKind.BUSY_NOT_KEPT_AWAKE,
                [_busy_sentence(status), sentence, *extra],
                hint=hint,
                offers_keep=offers_keep,
                reason=reason,
            )

    keeper = _keeper_sentence(traits, status) if sleeps else ""
    by_this_computer = sleeps and traits.needs_outside_keep_awake
    suffix = f" · {KEPT_AWAKE_BY_THIS_COMPUTER}"
    if offers_keep:
        label = LABELS[BadgeKind.BUSY_PAST_CEILING] + suffix if by_this_computer else None
        return _make(
            BadgeKind.BUSY_PAST_CEILING,
            [_busy_sentence(status), _ceiling_sentence(status, connection, now_monotonic), keeper],
            hint="Click Keep awake to restart the ceiling." if status.prompt_pending else "",
            offers_keep=True,
            label=label,
        )
    label = LABELS[BadgeKind.BUSY] + suffix if by_this_computer else None
    return _make(BadgeKind.BUSY, [_busy_sentence(status), keeper], label=label)
