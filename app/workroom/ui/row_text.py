"""Words for one host's row and detail panel, from its snapshot (no Qt: the rules are testable alone).

The badge itself comes from core.badge; these are the other columns: what keeps it busy, awake time,
connection state, and the seconds left on a pending prompt. Only a live row shows what the agent says
now; a row that is not live shows "last known … (N min ago)" or nothing, never a stale verdict as if
it were current (docs/ui.md "Words for each state").
"""

from __future__ import annotations

import shlex
import time

from workroom.core import box_times
from workroom.core.busy_reasons import reason_words
from workroom.core.connection import CONNECTION_SPECS, waiting_words
from workroom.core.durations import format_duration
from workroom.core.errors import Face
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.platform_clock import clock_words, stop_words, stops_words
from workroom.core.protocol import Verdict

NO_VALUE = "—"


def is_live(snap: HostSnapshot) -> bool:
    return snap.connection.spec.live and snap.status is not None


def last_known_text(snap: HostSnapshot, now_monotonic: float) -> str:
    """For a row that is not live: what the box was doing when its agent last spoke and how long ago, from the
    one record every face reads (core.last_known), or "" when nothing is known."""
    if is_live(snap):
        return ""
    if snap.last_known is not None and snap.last_known.known:
        return snap.last_known.words(time.time())
    if snap.status is None or snap.status_received_at is None:
        return ""
    age = max(0.0, now_monotonic - snap.status_received_at)
    return f"last known {snap.status.classifier_verdict.value.lower()} ({format_duration(age)} ago)"


def verdict_text(snap: HostSnapshot, now_monotonic: float | None = None) -> str:
    """What the agent decides now (live), else the last known verdict with its age, else a dash.

    When the agent tells the provider something else than it sees (an unanswered prompt: busy, but
    reported idle so the box may sleep) both are said.
    """
    status = snap.status
    if status is None:
        return NO_VALUE
    if not is_live(snap):
        return last_known_text(snap, now_monotonic) if now_monotonic is not None else NO_VALUE
    seen = status.classifier_verdict.value.capitalize()
    if status.classifier_verdict is not status.verdict:
        return f"{seen} (reported to the provider as {status.verdict.value.lower()})"
    return seen


def busy_text(snap: HostSnapshot, now_monotonic: float | None = None) -> str:
    """What keeps a live host busy, in plain words (`core.busy_reasons`); nothing for a row that is not live.
    With `now_monotonic`, a reason with a start time says for how long."""
    if not is_live(snap) or snap.status is None or not snap.status.busy_reasons:
        return NO_VALUE
    now = agent_now(snap, now_monotonic) if now_monotonic is not None else None
    return "; ".join(reason_words(snap.status, agent_now=now))


def raw_signal_text(snap: HostSnapshot) -> str:
    """The agent's own words for what voted busy (the detail panel keeps them for the curious)."""
    if not is_live(snap) or snap.status is None or not snap.status.busy_reasons:
        return NO_VALUE
    return "; ".join(snap.status.busy_reasons)


def badge_text(snap: HostSnapshot, now_monotonic: float) -> str:
    """The one state column: the badge's word, plus the last known verdict on a row that is not live, or when
    a live idle box that sleeps will sleep ("Idle · asleep in about 45 s")."""
    shown = snap.badge(now_monotonic)
    known = last_known_text(snap, now_monotonic)
    if not known:
        estimate = sleep_estimate(snap, now_monotonic)
        known = estimate.words() if estimate is not None else ""
    return " · ".join(part for part in (shown.label, known, shown.note) if part)


def badge_tooltip(snap: HostSnapshot, now_monotonic: float | None = None) -> str:
    """The badge's sentences as the desktop app says them: an error's advice in the app's own words (its
    fields, not the command line's options), where the error has them."""
    return snap.badge(now_monotonic).tooltip


def agent_now(snap: HostSnapshot, now_monotonic: float) -> float | None:
    """The agent's clock now, estimated from when its last status arrived here."""
    if snap.status is None:
        return None
    if snap.status_received_at is None:
        return snap.status.monotonic
    return snap.status.monotonic + max(0.0, now_monotonic - snap.status_received_at)


def busy_seconds(snap: HostSnapshot, now_monotonic: float) -> float | None:
    """Busy for, as of now: how long the agent has seen work without a break (core.box_times); None for a row
    that is not live or an agent that sees no work."""
    status = snap.status
    now = agent_now(snap, now_monotonic)
    if status is None or not is_live(snap) or now is None:
        return None
    return box_times.busy_seconds(status, now)


def busy_for_text(snap: HostSnapshot, now_monotonic: float) -> str:
    seconds = busy_seconds(snap, now_monotonic)
    return NO_VALUE if seconds is None else format_duration(seconds)


def sleep_estimate(snap: HostSnapshot, now_monotonic: float) -> box_times.SleepEstimate | None:
    """When a live, idle box that sleeps will sleep (the hold after work, the provider's idle clock)."""
    status = snap.status
    now = agent_now(snap, now_monotonic)
    if status is None or not is_live(snap) or now is None:
        return None
    return box_times.sleep_estimate(status, snap.traits, now, reading=snap.connection.idle_clock,
                                    now_monotonic=now_monotonic)


def ceiling_text(snap: HostSnapshot, now_monotonic: float) -> str:
    """The awake ceiling and how much of it this stretch of work has used ("12 s of 1 min used, ask at the
    ceiling"); Keep awake and Wake and connect restart what is used."""
    status = snap.status
    assert status is not None
    mode = "ask at the ceiling" if status.ask_at_ceiling else "advisory"
    ceiling = format_duration(status.ceiling_seconds)
    now = agent_now(snap, now_monotonic)
    if not is_live(snap) or now is None or status.classifier_verdict is not Verdict.BUSY:
        return f"{ceiling} ({mode})"
    used = format_duration(box_times.ceiling_used_seconds(status, now))
    return f"{used} of {ceiling} used ({mode})"


def in_state_seconds(snap: HostSnapshot, now_monotonic: float) -> float | None:
    """How long the host has been in its connection state: an asleep box since the app first saw it asleep (the
    record survives a restart), else since the session entered the state."""
    if snap.connection.spec.asleep and snap.last_known is not None:
        asleep = snap.last_known.asleep_seconds(time.time())
        if asleep is not None:
            return asleep
    since = snap.connection.since_monotonic
    return None if since is None else max(0.0, now_monotonic - since)


def connection_text(snap: HostSnapshot, now_monotonic: float) -> str:
    info = snap.connection
    words = info.spec.words
    if info.spec.retrying and info.retry_at_monotonic is not None:
        left = max(0.0, info.retry_at_monotonic - now_monotonic)
        words += f" in {format_duration(left)}"
    if info.waiting_for is not None:
        words += f" · {waiting_words(info.waiting_for)}"
    platform = platform_text(snap, short=True)
    return f"{words} · {platform}" if platform else words


def platform_text(snap: HostSnapshot, now: float | None = None, *, short: bool = False) -> str:
    """The platform's own clock for a Coder workspace or a codespace ("stops in 12 min", with its maximum
    beside the awake ceiling unless `short`), or "" for a host without one. `now`: Unix seconds."""
    clock = snap.connection.platform
    if clock is None:
        return ""
    now = time.time() if now is None else now
    if short:
        return stops_words(clock, now) if clock.readable else f"unknown: {clock.said}"
    ceiling = snap.status.ceiling_seconds if snap.status is not None else None
    words = clock_words(clock, now, ceiling_seconds=ceiling)
    extra = [w for w in (stop_words(clock), snap.connection.platform_note, snap.connection.platform_words) if w]
    return "; ".join([words, *extra])


def prompt_deadline(snap: HostSnapshot) -> float | None:
    """The pending prompt's deadline on the agent's clock, or None when nothing is asked or nothing can answer.

    An answer travels over the link, so a prompt counts only while the host is live: after Disconnect, a lost
    link or the box going asleep the last status still says "pending", yet Keep awake could only fail. The agent
    keeps the prompt and its deadline across connections and says so in the first status of the next one, so
    the prompt shows again as soon as the link is back (unless it was answered or ran out meanwhile)."""
    if not snap.connection.spec.live:
        return None
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
        traits.metering.sleeps and traits.idle_window_seconds) else ("yes" if traits.metering.sleeps else "never")
    lines = [
        ("Workroom", workroom_name(snap)),
        ("Provider", snap.host.provider),
        ("Address", "this computer" if snap.host.is_this_computer else snap.host.connect_address),
        ("Sleeps when idle", sleeps),
        ("Connection", connection_text(snap, now_monotonic)),
        ("Agent sees", verdict_text(snap, now_monotonic)),
        ("Busy because", busy_text(snap, now_monotonic)),
        ("Raw signal", raw_signal_text(snap)),
        ("Busy for", busy_for_text(snap, now_monotonic)),
    ]
    status = snap.status
    if status is not None:
        lines.append(("Awake ceiling", ceiling_text(snap, now_monotonic)))
        lines.append(("Agent", f"{status.agent.version} (protocol {status.agent.protocol})"))
        if status.settings_error:
            lines.append(("Settings problem", status.settings_error))
    if snap.install is not None and snap.install.supervisor:
        lines.append(("Kept running by", snap.install.supervisor))
    platform = platform_text(snap)
    if platform:
        lines.append(("Platform", platform))
    seen = keep_awake_seen_text(snap, now_monotonic)
    if seen:
        lines.append(("Keep-awake seen", seen))
    if snap.connection.error is not None:
        lines.append(("Last error", snap.connection.error.text(Face.APP)))
    return lines


def keep_awake_seen_text(snap: HostSnapshot, now_monotonic: float) -> str:
    """Whether the provider's idle clock shows the keep-awake, and when it last saw activity (sleepable
    hosts while busy). Never "confirmed" without a reading that proves it."""
    if not snap.traits.metering.sleeps or snap.status is None or snap.status.verdict is not Verdict.BUSY:
        return ""
    proof = snap.connection.heartbeat_proof
    if proof is None:
        return "unconfirmed (not checked now)"
    age = proof.last_seen_age(now_monotonic)
    seen = f"; the provider last saw activity {format_duration(age)} ago" if age is not None else ""
    if proof.confirmed is True:
        return "confirmed" + seen
    if proof.confirmed is False:
        return "NOT seen" + seen + f". {proof.why}"
    return proof.why or "not known yet"  # a whole sentence of its own ("Not known yet: …"), not a fragment


def ssh_command(snap: HostSnapshot) -> str | None:
    """The ssh command a person would type to reach this host (None for this computer)."""
    host = snap.host
    if host.is_this_computer:
        return None
    parts = ["ssh"]
    if host.port is not None:
        parts += ["-p", str(host.port)]
    if host.identity is not None and host.identity.kind.value == "file":
        parts += ["-i", shlex.quote(host.identity.value)]
    target = host.connect_address
    parts.append(shlex.quote(f"{host.user}@{target}" if host.user else target))
    return " ".join(parts)


def needs_answer(snap: HostSnapshot) -> bool:
    return prompt_deadline(snap) is not None


def summary_counts(snaps: list[HostSnapshot]) -> list[tuple[str, int]]:
    """How many hosts are in each of the summary's groups (the connection state's `counted` word; a live link
    whose first status has not come yet is still connecting), live first, then in the state table's order."""
    order = ["live", *dict.fromkeys(spec.counted for spec in CONNECTION_SPECS.values())]
    counts: dict[str, int] = {}
    for snap in snaps:
        words = "live" if is_live(snap) else "connecting" if snap.connection.spec.live else snap.connection.spec.counted
        counts[words] = counts.get(words, 0) + 1
    return [(words, counts[words]) for words in dict.fromkeys(order) if words in counts]


def summary_text(snaps: list[HostSnapshot], answered: dict[str, float] | None = None) -> str:
    """The tray's first line: how many hosts are in which state, and who needs an answer ("1 live · 2 asleep ·
    box2 needs an answer"): boxes asleep or let go on purpose are counted as such, not as hosts that failed to be
    live. `answered` holds {host: prompt deadline} the user already answered here."""
    if not snaps:
        return "No hosts yet"
    done = answered or {}
    text = " · ".join(f"{n} {words}" for words, n in summary_counts(snaps))
    asking = [s.host.name for s in snaps if needs_answer(s) and done.get(s.host.name) != prompt_deadline(s)]
    if len(asking) == 1:
        text += f" · {asking[0]} needs an answer"
    elif asking:
        text += f" · {len(asking)} need an answer"
    return text
