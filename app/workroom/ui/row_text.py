"""Words for one host's row and detail panel, from its snapshot (no Qt: the rules are testable alone).

The badge itself comes from core.badge; these are the other columns: verdict, what keeps it busy,
awake time, connection state, and the seconds left on a pending prompt.
"""

from __future__ import annotations

from workroom.core.connection import ConnectionState
from workroom.core.durations import format_duration
from workroom.sessions.host_session import HostSnapshot

CONNECTION_WORDS: dict[ConnectionState, str] = {
    ConnectionState.DISCONNECTED: "Not connected",
    ConnectionState.CONNECTING: "Connecting…",
    ConnectionState.HOST_KEY_QUESTION: "Waiting for you to trust its key",
    ConnectionState.PUSHING: "Installing the agent…",
    ConnectionState.LIVE: "Live",
    ConnectionState.QUIET: "Live (quiet while idle)",
    ConnectionState.LOST: "Lost",
    ConnectionState.BACKING_OFF: "Lost, retrying",
    ConnectionState.ASLEEP: "Asleep",
    ConnectionState.ERROR: "Cannot connect",
}
NO_VALUE = "—"


def verdict_text(snap: HostSnapshot) -> str:
    if snap.status is None:
        return NO_VALUE
    return snap.status.verdict.value.capitalize()


def busy_text(snap: HostSnapshot) -> str:
    if snap.status is None or not snap.status.busy_reasons:
        return NO_VALUE
    return "; ".join(snap.status.busy_reasons)


def agent_now(snap: HostSnapshot, now_monotonic: float) -> float | None:
    """The agent's clock now, estimated from when its last status arrived here."""
    if snap.status is None:
        return None
    if snap.status_received_at is None:
        return snap.status.monotonic
    return snap.status.monotonic + max(0.0, now_monotonic - snap.status_received_at)


def awake_seconds(snap: HostSnapshot, now_monotonic: float) -> float | None:
    """Time awake as of now: the agent's figure, advanced while it is busy and we are live."""
    status = snap.status
    if status is None:
        return None
    live = snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
    if status.busy and live and snap.status_received_at is not None:
        return status.awake_seconds + max(0.0, now_monotonic - snap.status_received_at)
    return status.awake_seconds


def awake_text(snap: HostSnapshot, now_monotonic: float) -> str:
    seconds = awake_seconds(snap, now_monotonic)
    return NO_VALUE if seconds is None else format_duration(seconds)


def connection_text(snap: HostSnapshot, now_monotonic: float) -> str:
    info = snap.connection
    words = CONNECTION_WORDS.get(info.state, str(info.state))
    if info.state is ConnectionState.BACKING_OFF and info.retry_at_monotonic is not None:
        left = max(0.0, info.retry_at_monotonic - now_monotonic)
        words += f" in {format_duration(left)}"
    return words


def prompt_deadline(snap: HostSnapshot) -> float | None:
    """The pending prompt's deadline on the agent's clock, or None when nothing is asked."""
    if snap.status is not None and snap.status.prompt_pending and snap.status.prompt_deadline is not None:
        return snap.status.prompt_deadline
    if snap.prompt is not None and (snap.status is None or snap.status.prompt_pending):
        return snap.prompt.prompt_deadline
    return None


def prompt_seconds_left(snap: HostSnapshot, now_monotonic: float) -> float | None:
    deadline = prompt_deadline(snap)
    now = agent_now(snap, now_monotonic)
    if deadline is None or now is None:
        return None
    return max(0.0, deadline - now)


def workroom_name(snap: HostSnapshot) -> str:
    """The workroom's name as its agent says it, else the host's name."""
    if snap.prompt is not None and snap.prompt.workroom:
        return snap.prompt.workroom
    if snap.status is not None and snap.status.workroom:
        return snap.status.workroom
    return snap.host.name


def detail_lines(snap: HostSnapshot, now_monotonic: float) -> list[tuple[str, str]]:
    """(label, value) pairs for the detail panel."""
    traits = snap.traits
    sleeps = "yes, after " + format_duration(traits.idle_window_seconds) if (
        traits.sleeps_when_idle and traits.idle_window_seconds) else ("yes" if traits.sleeps_when_idle else "never")
    lines = [
        ("Workroom", workroom_name(snap)),
        ("Provider", snap.host.provider),
        ("Address", snap.host.connect_address if snap.host.provider != "local" else "this computer"),
        ("Sleeps when idle", sleeps),
        ("Connection", connection_text(snap, now_monotonic)),
        ("Verdict", verdict_text(snap)),
        ("Busy because", busy_text(snap)),
        ("Awake for", awake_text(snap, now_monotonic)),
    ]
    status = snap.status
    if status is not None:
        mode = "ask at the ceiling" if status.ask_at_ceiling else "advisory"
        lines.append(("Awake ceiling", f"{format_duration(status.ceiling_seconds)} ({mode})"))
        lines.append(("Agent", f"{status.agent.version} (protocol {status.agent.protocol})"))
        if status.settings_error:
            lines.append(("Settings problem", status.settings_error))
    if snap.install is not None and snap.install.supervisor:
        lines.append(("Kept running by", snap.install.supervisor))
    if snap.connection.error is not None:
        lines.append(("Last error", snap.connection.error.text()))
    return lines
