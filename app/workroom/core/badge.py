"""The badge a host shows: one pure function from what the agent said, the provider's traits and
the connection, to a kind, a label and a plain-words tooltip (docs/ui.md "Words for each state").

"Busy but not kept awake" appears only on hosts that can sleep: on a host that never sleeps,
nothing needs keeping awake, so nothing there is alarming.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import assert_never

from pydantic import BaseModel, ConfigDict

from workroom.core.box_times import past_ceiling_words
from workroom.core.busy_reasons import reason_words
from workroom.core.connection import UNREACHABLE_STATES, WAITING_STATES, ConnectionInfo, ConnectionState
from workroom.core.durations import format_duration
from workroom.core.errors import ERROR_KINDS, Face
from workroom.core.exception_names import without_exception_names
from workroom.core.heartbeat_proof import ProofState
from workroom.core.metering import Keeper, NotKeptAwakeReason
from workroom.core.platform_clock import MAXIMUM_WORDS, at_its_maximum, stop_words, stops_words
from workroom.core.protocol import PROTOCOL_VERSION, Status, Verdict
from workroom.core.traits import ProviderTraits

MAX_REASONS_SHOWN = 3


class BadgeKind(StrEnum):
    IDLE = "idle"
    BUSY = "busy"
    BUSY_PAST_CEILING = "busy_past_ceiling"
    """Past the awake ceiling with nobody asked: a note (advisory mode, or a host that never sleeps)."""
    ASKING = "asking"
    """Past the awake ceiling on a box that sleeps, and its agent asks whether to keep it awake."""
    BUSY_NOT_KEPT_AWAKE = "busy_not_kept_awake"
    ASLEEP = "asleep"
    OFFLINE = "offline"
    UNKNOWN = "unknown"

    @property
    def spec(self) -> BadgeSpec:
        return BADGE_SPECS[self]


class MenuTime(StrEnum):
    """What the tray's line for a host counts beside the state word."""

    BUSY = "busy"
    """How long it has been busy without a break ("box1 — Busy 42 min"; core.box_times)."""
    IN_STATE = "in_state"
    """How long it has been in this state ("box2 — Asleep 3 min")."""
    LEFT = "left"
    """How long the answer may wait ("box1 — Asking to keep awake, answer within 9 min")."""
    NOTHING = "nothing"
    """Nothing: the agent does not say since when a host is idle, and connected-for would mislead."""


@dataclass(frozen=True)
class BadgeSpec:
    """One badge kind, as every face shows it (docs/architecture.md, "Adding a badge state").

    `rank` orders the tray: the menu-bar icon and its tooltip show the highest rank among the hosts, so what
    needs the user (`needs_user`: a lost host, a box busy but not kept awake, a prompt waiting) outranks every
    state that is only information (an advisory ceiling note included). `icon` names the menu-bar template
    image (`resources/icons/menubar/badge_<icon>Template.png`, drawn by build/make_icons.py). `counted` is the
    tray tooltip's word for hosts in this state ("2 idle"); `shows_error` makes the CLI's status line add the
    connection's last error.
    """

    kind: BadgeKind
    rank: int
    label: str
    icon: str
    needs_user: bool
    counted: str
    menu_time: MenuTime
    shows_error: bool = False


BADGE_SPECS: dict[BadgeKind, BadgeSpec] = {spec.kind: spec for spec in sorted((
    BadgeSpec(BadgeKind.IDLE, 0, "Idle", "idle", False, "idle", MenuTime.NOTHING),
    BadgeSpec(BadgeKind.ASLEEP, 1, "Asleep", "asleep", False, "asleep", MenuTime.IN_STATE),
    BadgeSpec(BadgeKind.BUSY, 2, "Busy", "busy", False, "busy", MenuTime.BUSY),
    BadgeSpec(BadgeKind.BUSY_PAST_CEILING, 3, "Busy past ceiling", "busy_past_ceiling", False, "busy past ceiling",
              MenuTime.BUSY),
    BadgeSpec(BadgeKind.UNKNOWN, 4, "Unknown", "unknown", False, "unknown", MenuTime.IN_STATE, shows_error=True),
    BadgeSpec(BadgeKind.OFFLINE, 5, "Offline", "offline", True, "offline", MenuTime.IN_STATE, shows_error=True),
    BadgeSpec(BadgeKind.ASKING, 6, "Asking to keep awake", "asking", True, "asking to keep awake", MenuTime.LEFT),
    BadgeSpec(BadgeKind.BUSY_NOT_KEPT_AWAKE, 7, "Busy but not kept awake", "busy_not_kept_awake", True,
              "busy but not kept awake", MenuTime.BUSY),
), key=lambda spec: spec.rank)}
"""Every badge kind, from least to most in need of the user."""

LABELS: dict[BadgeKind, str] = {kind: spec.label for kind, spec in BADGE_SPECS.items()}
SEVERITY_ORDER: tuple[BadgeKind, ...] = tuple(BADGE_SPECS)
"""Badge kinds from least to most in need of the user."""


def worst_badge_kind(kinds: Iterable[BadgeKind], default: BadgeKind = BadgeKind.UNKNOWN) -> BadgeKind:
    """The kind among `kinds` that most needs the user (`default` when there are none)."""
    return max(kinds, key=lambda kind: BADGE_SPECS[kind].rank, default=default)


def tray_icon_kind(badges: Iterable[Badge], default: BadgeKind = BadgeKind.UNKNOWN) -> BadgeKind:
    """The kind the tray's icon shows: the one that most needs the user, each host counted as its `icon_kind`."""
    return worst_badge_kind((b.icon_kind or b.kind for b in badges), default)


class Badge(BaseModel):
    """What the UI shows for one host. `tooltip` is complete plain sentences, ending with what to do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: BadgeKind
    label: str
    tooltip: str
    offers_keep: bool = False
    """Show "Keep awake": a prompt is pending or the ceiling is exceeded, on a box that sleeps (on a host that
    never sleeps there is nothing to keep awake)."""
    reason: NotKeptAwakeReason | None = None
    hint: str = ""
    """What to do next, also the tooltip's last sentence (empty when nothing needs doing)."""
    note: str = ""
    """A short note every face shows beside the label for a while ("agent replaced at 14:02"; empty: none)."""
    icon_kind: BadgeKind | None = None
    """The kind the tray's icon counts this host as, where it is not `kind` (None): a host that never sleeps, busy
    past its ceiling, is plain busy there, since it has nothing to keep awake and nothing to ask."""
    valid_until: float | None = None
    """When this badge stops being true with nothing new heard (this computer's monotonic clock): a prompt's
    deadline, after which the agent lets the box sleep. The faces evaluate the badge again then (one timer,
    since an idle box that sleeps sends nothing). None: true until the next snapshot."""

    @property
    def spec(self) -> BadgeSpec:
        return BADGE_SPECS[self.kind]

    @property
    def needs_user(self) -> bool:
        return BADGE_SPECS[self.kind].needs_user


def tray_summary(badges: Mapping[str, Badge], names_shown: int = 3) -> str:
    """The menu-bar icon's tooltip: who needs the user and why, else how many hosts are in which state.

    "Workroom: box2 needs you (Offline); 3 hosts" or "Workroom: 3 hosts: 2 idle, 1 busy".
    """
    if not badges:
        return "Workroom: no hosts"
    total = f"{len(badges)} host{'s' if len(badges) != 1 else ''}"
    needing = sorted(((n, b) for n, b in badges.items() if b.needs_user), key=lambda nb: (-nb[1].spec.rank, nb[0]))
    if needing:
        named = ", ".join(f"{n} ({b.label})" for n, b in needing[:names_shown])
        more = f" and {len(needing) - names_shown} more" if len(needing) > names_shown else ""
        verb = "needs" if len(needing) == 1 else "need"
        return f"Workroom: {named}{more} {verb} you; {total}"
    counts = [(spec.counted, sum(1 for b in badges.values() if b.kind is kind))
              for kind, spec in reversed(BADGE_SPECS.items())]
    return f"Workroom: {total}: " + ", ".join(f"{n} {words}" for words, n in counts if n)


KEPT_AWAKE_BY_THIS_COMPUTER = "kept awake by this computer — it stops if this computer sleeps"
KEPT_AWAKE_THROUGH_PLATFORM = "kept awake by this computer; nothing keeps it awake while this Mac sleeps"


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
    face: Face = Face.APP,
) -> Badge:
    """The badge for one host. Pure: same inputs, same badge.

    `now_monotonic` (this computer's clock) lets the tooltip count down a pending prompt, and tells a prompt
    whose deadline has passed (the agent has let the box sleep by then); without it, as of the last status.
    `face` words advice for the app's controls or the command line's.
    """
    state = connection.state
    if state is ConnectionState.ASLEEP:
        return _asleep(traits, connection)
    if state is ConnectionState.UNREADABLE:
        return _unreadable(connection)
    if state is ConnectionState.RELEASED:
        return _released(status, traits, connection, now_monotonic)
    if connection.agent_silent_since is not None and not connection.spec.live and traits.metering.sleeps \
            and status is not None and (status.verdict is Verdict.BUSY or status.classifier_verdict is Verdict.BUSY):
        return _frozen_agent(connection)
    if state in UNREACHABLE_STATES:
        return _offline(connection, face)
    if state is ConnectionState.DISCONNECTED:
        why = [without_exception_names(connection.error.message)] if connection.error is not None else []
        return _make(BadgeKind.UNKNOWN, ["Not connected, so the app does not know what this host is doing.", *why],
                     hint=(connection.error.hint if connection.error is not None and connection.error.hint
                           else "Connect to see its state."))
    if state in WAITING_STATES:
        return _waiting(connection)
    if status is None:
        return _make(BadgeKind.UNKNOWN, ["Connected; waiting for the agent's first status."])
    deadline = prompt_deadline_here(status, connection)
    expired = deadline is not None and now_monotonic is not None and now_monotonic >= deadline
    result = _from_status(status, traits, connection, now_monotonic, prompt_expired=expired)
    if deadline is not None and not expired:
        result = result.model_copy(update={"valid_until": deadline})
    if connection.suspended_while_busy:
        result = result.model_copy(update={"tooltip": f"{SUSPENDED_WHILE_BUSY} {result.tooltip}"})
    replaced = connection.agent_replaced
    if replaced is not None and replaced.shown(now_monotonic):
        result = result.model_copy(update={"tooltip": f"{replaced.words()} {result.tooltip}",
                                           "note": replaced.note()})
    return result


def agent_clock(status: Status, connection: ConnectionInfo, now_monotonic: float | None) -> float:
    """The agent's monotonic clock now, estimated from when its last status arrived here."""
    if now_monotonic is None or connection.status_received_monotonic is None:
        return status.monotonic
    return status.monotonic + max(0.0, now_monotonic - connection.status_received_monotonic)


def _here(agent_time: float | None, status: Status, connection: ConnectionInfo) -> float | None:
    """A time on the agent's clock, on this computer's monotonic clock (None: none, or no way to tell)."""
    if agent_time is None or connection.status_received_monotonic is None:
        return None
    return connection.status_received_monotonic + (agent_time - status.monotonic)


def checking_ends_here(status: Status, connection: ConnectionInfo) -> float | None:
    """When a fresh agent's first look ends, on this computer's monotonic clock (None: not known here)."""
    return _here(status.checking_until, status, connection)


def prompt_deadline_here(status: Status, connection: ConnectionInfo) -> float | None:
    """A pending prompt's deadline on this computer's monotonic clock (None: no prompt, or no way to tell)."""
    return _here(status.prompt_deadline, status, connection) if status.prompt_pending else None


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
        sentences.append(_slept_keeper_sentence(traits.metering.keeper))
        hint = "Wake and connect to see what survived; check its keep-awake before starting long work again."
    stopped = stop_words(connection.platform) if connection.platform is not None else None
    if stopped is not None:
        sentences.append(stopped[:1].upper() + stopped[1:] + ".")
    if connection.wake_seconds is not None:
        sentences.append(f"Last wake took {connection.wake_seconds:.1f} s.")
    return _make(BadgeKind.ASLEEP, sentences, hint=hint, reason=reason)


def _unreadable(connection: ConnectionInfo) -> Badge:
    """The provider could not say whether the box sleeps: unknown, with why — never asleep, never offline."""
    error = connection.error
    why = without_exception_names(error.message) if error is not None else "The provider could not be read."
    return _make(BadgeKind.UNKNOWN, [
        f"Could not read the provider: {why}",
        "The box may be asleep, so the app does not connect to it on its own (that could wake it).",
    ], hint=(error.hint if error is not None and error.hint else
             "The app reads the provider again on its own; Wake and connect reaches the box (it may wake it)."),
        label="Unknown: could not read the provider")


def _frozen_agent(connection: ConnectionInfo) -> Badge:
    """Its agent stopped answering while the box was busy: nothing keeps the box awake while it is replaced (or,
    where it cannot be, at all)."""
    sentences = ["The agent stopped answering (frozen), so it is not keeping the box awake and the box may fall "
                 "asleep mid-work."]
    hint = "The app is replacing it."
    error = connection.error
    if error is not None:
        sentences.append(f"{error.title}: {without_exception_names(error.message)}")
        hint = error.hint or hint
    return _make(BadgeKind.BUSY_NOT_KEPT_AWAKE, sentences, hint=hint, reason=NotKeptAwakeReason.STALLED_AGENT)


def _offline(connection: ConnectionInfo, face: Face) -> Badge:
    """Offline, in the words of what happened: a refused login says so (`core.errors.ERROR_KINDS`)."""
    backing_off = connection.state is ConnectionState.BACKING_OFF
    hint = "The app will keep trying." if backing_off else "Reconnect to try again."
    error = connection.error
    if error is None:
        return _make(BadgeKind.OFFLINE, ["The app cannot reach this host."], hint=hint)
    message = without_exception_names(error.message)
    hint = error.advice(face) or hint
    named = ERROR_KINDS.get(error.kind)
    if named is not None and named.label is not None and named.lead is not None:
        return _make(BadgeKind.OFFLINE, [named.lead, message], hint=hint, label=named.label)
    return _make(BadgeKind.OFFLINE, ["The app cannot reach this host.", f"{error.title}: {message}"], hint=hint)


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


def _busy_sentence(status: Status, agent_now: float) -> str:
    plain = reason_words(status, agent_now=agent_now)
    reasons = plain[:MAX_REASONS_SHOWN]
    more = len(plain) - len(reasons)
    if not reasons:
        return "Busy."
    text = "Busy: " + "; ".join(reasons)
    if more > 0:
        text += f" (and {more} more)"
    return text + "."


def _ceiling_sentence(status: Status, connection: ConnectionInfo, now_monotonic: float | None, *,
                      asks: bool = True) -> str:
    """How long past the ceiling, and (`asks`: on a box that sleeps) by when to answer."""
    text = f"It has been {past_ceiling_words(status, agent_clock(status, connection, now_monotonic))}"
    if not asks:
        return text + "."
    if status.prompt_pending and status.prompt_deadline is not None:
        left = status.prompt_deadline - agent_clock(status, connection, now_monotonic)
        return text + f"; answer Keep awake within {format_duration(max(0.0, left))} or it will be allowed to sleep."
    if status.prompt_pending:
        return text + "; the agent is asking whether to keep it awake."
    return text + "."


def _heartbeat_interval(status: Status, traits: ProviderTraits) -> float | None:
    if status.keep_awake is not None:
        return status.keep_awake.interval_seconds
    return traits.heartbeat_interval_seconds


def _slept_keeper_sentence(keeper: Keeper) -> str:
    """What a box that slept while busy says of its keeper."""
    match keeper:
        case Keeper.THIS_COMPUTER | Keeper.PLATFORM:
            return "Only this computer keeps such a box awake, and only while the app runs."
        case Keeper.AGENT_HEARTBEAT | Keeper.NOTHING_NEEDED:
            return ""
        case _:
            assert_never(keeper)


def _window_too_short(status: Status, traits: ProviderTraits) -> tuple[float, float] | None:
    """(window, interval) when the idle window is under twice the heartbeat interval (only the agent's
    heartbeat has an interval the window must fit twice)."""
    if traits.metering.keeper is not Keeper.AGENT_HEARTBEAT:
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
    status: Status, traits: ProviderTraits, connection: ConnectionInfo, agent_now: float
) -> tuple[NotKeptAwakeReason, str, str] | None:
    """Why a busy, sleepable host is not being kept awake: (reason, sentence, hint), or None. Asked of its
    metering's keeper (core.metering); the reasons each keeper gives are its row's `not_kept_reasons`."""
    keeper = traits.metering.keeper
    match keeper:
        case Keeper.AGENT_HEARTBEAT:
            return _heartbeat_not_kept(status, traits, connection)
        case Keeper.THIS_COMPUTER:
            return _this_computer_not_kept(connection)
        case Keeper.PLATFORM:
            return _platform_not_kept(status, connection, agent_now)
        case Keeper.NOTHING_NEEDED:
            return None
        case _:
            assert_never(keeper)


PLATFORM_HINTS = {
    NotKeptAwakeReason.PLATFORM_UNREADABLE: "Check the platform's command line (installed, logged in: `coder login`, "
                                            "`gh auth login`); the app reads it again on its own.",
    NotKeptAwakeReason.PLATFORM_EXTEND_FAILING: "Check the platform's command line; the app tries again before the "
                                                "deadline.",
    NotKeptAwakeReason.PLATFORM_MAXIMUM: "Save your work: the platform stops it at its limit whatever is asked.",
    NotKeptAwakeReason.AWAKE_CEILING_REACHED: "Click Keep awake to keep it up.",
}
"""What to do about each reason a platform's box is not kept awake (the keeper's own reasons)."""


def _platform_not_kept(status: Status, connection: ConnectionInfo,
                       agent_now: float) -> tuple[NotKeptAwakeReason, str, str] | None:
    """Why the platform's keep-alive does not hold the box now, as the session last found (its words); or, before
    it has found anything, the platform's maximum read from the clock itself (`at_its_maximum`: how long the agent
    still means to keep it up, counted now; the reading's "time left" only shrinks since, so it is never claimed
    where the ceiling ends first)."""
    reason = connection.platform_not_kept
    clock = connection.platform
    if reason is None and clock is not None:
        kept_for = (status.prompt_deadline - agent_now if status.prompt_pending and status.prompt_deadline
                    is not None else status.ceiling_seconds - status.awake_seconds - (agent_now - status.monotonic))
        if at_its_maximum(clock, kept_for):
            reason = NotKeptAwakeReason.PLATFORM_MAXIMUM
            return reason, f"{MAXIMUM_WORDS}: it stops at its limit whatever the app asks.", PLATFORM_HINTS[reason]
    if reason is None:
        return None
    words = connection.platform_words or "the platform cannot be asked"
    lead = "Nothing keeps it awake: " if reason is NotKeptAwakeReason.PLATFORM_UNREADABLE else ""
    return reason, f"{lead}{words}.", PLATFORM_HINTS.get(reason, "")


def _released(status: Status | None, traits: ProviderTraits, connection: ConnectionInfo,
              now_monotonic: float | None) -> Badge:
    """The app let go of its session (an open session is activity there): idle, or busy past its ceiling with
    nobody asked, either way left to the platform's own clock."""
    clock = connection.platform
    stops = f"the platform {stops_words(clock, clock.read_at)}" if clock is not None else \
        "the platform stops it on its own clock"
    if status is not None and status.verdict is Verdict.BUSY:
        agent_now = agent_clock(status, connection, now_monotonic)
        return _make(
            BadgeKind.BUSY_NOT_KEPT_AWAKE,
            [_busy_sentence(status, agent_now),
             f"It is past its {format_duration(status.ceiling_seconds)} awake ceiling, so the app stopped keeping "
             f"it awake and let go of its session; {stops}."],
            hint=PLATFORM_HINTS[NotKeptAwakeReason.AWAKE_CEILING_REACHED], offers_keep=traits.metering.sleeps,
            reason=NotKeptAwakeReason.AWAKE_CEILING_REACHED)
    return _make(BadgeKind.IDLE, [
        "Idle: nothing running on it counts as work.",
        f"An open session is activity there, so the app let go of its session: {stops}.",
        "The app watches the platform's list, and connects again when the box is used."])


def _heartbeat_not_kept(
    status: Status, traits: ProviderTraits, connection: ConnectionInfo
) -> tuple[NotKeptAwakeReason, str, str] | None:
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


def _this_computer_not_kept(connection: ConnectionInfo) -> tuple[NotKeptAwakeReason, str, str] | None:
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
    keeper = traits.metering.keeper
    match keeper:
        case Keeper.THIS_COMPUTER:
            return (
                "Kept awake by this computer while the app runs: if the app quits or this computer sleeps, nothing "
                "keeps it awake and the provider suspends it after its idle window (Settings can hold off this "
                "computer's idle sleep meanwhile, on macOS)."
            )
        case Keeper.AGENT_HEARTBEAT:
            interval = _heartbeat_interval(status, traits)
            every = f" (every {format_duration(interval)})" if interval is not None else ""
            return f"Kept awake by the agent's heartbeat{every}."
        case Keeper.PLATFORM:
            return (
                f"Kept awake by {traits.metering.keeper_words} (an open session is activity there, and its "
                "deadline is extended before it passes, never past the awake ceiling but by the platform's minimum "
                "step): nothing keeps it awake while this Mac sleeps or the app is not running."
            )
        case Keeper.NOTHING_NEEDED:
            return ""
        case _:
            assert_never(keeper)


def _label_suffix(keeper: Keeper) -> str:
    """What the busy label adds about its keeper: a keep-awake that ends when this computer sleeps says so."""
    match keeper:
        case Keeper.THIS_COMPUTER:
            return f" · {KEPT_AWAKE_BY_THIS_COMPUTER}"
        case Keeper.PLATFORM:
            return f" · {KEPT_AWAKE_THROUGH_PLATFORM}"
        case Keeper.AGENT_HEARTBEAT | Keeper.NOTHING_NEEDED:
            return ""
        case _:
            assert_never(keeper)


def _from_status(
    status: Status, traits: ProviderTraits, connection: ConnectionInfo, now_monotonic: float | None, *,
    prompt_expired: bool = False,
) -> Badge:
    sleeps = traits.metering.sleeps
    # Keep awake only where it changes something: on a host that never sleeps nothing is kept awake.
    offers_keep = sleeps and (status.prompt_pending or status.awake_ceiling_exceeded)
    claims_busy = status.verdict is Verdict.BUSY or status.classifier_verdict is Verdict.BUSY
    agent_now = agent_clock(status, connection, now_monotonic)

    silent = connection.agent_silent_since
    if silent is not None and sleeps and claims_busy:
        quiet_for = f" for {format_duration(now_monotonic - silent)}" if now_monotonic is not None else ""
        return _make(
            BadgeKind.BUSY_NOT_KEPT_AWAKE,
            [f"The agent has sent no heartbeat report{quiet_for}: it may be frozen, so it is not keeping the box "
             "awake and the box may fall asleep mid-work."],
            hint="The app is checking it, and replaces it if it does not answer.",
            offers_keep=offers_keep,
            reason=NotKeptAwakeReason.STALLED_AGENT,
        )
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

    if status.suppressed or prompt_expired:
        # A prompt past its deadline is suppressed by the agent's own rule; its next status will say so.
        ceiling = (
            f"It has been {past_ceiling_words(status, agent_now)}, and "
            + ("you chose Let it sleep" if status.let_sleep else "nobody answered the prompt")
        )
        if sleeps:
            return _make(
                BadgeKind.BUSY_NOT_KEPT_AWAKE,
                [_busy_sentence(status, agent_now), ceiling + ", so the agent stopped keeping it awake; "
                 "the provider will put it to sleep when its idle window runs out."],
                hint="Click Keep awake to keep it up.",
                offers_keep=True,
                reason=NotKeptAwakeReason.UNANSWERED_PROMPT,
            )
        return _make(
            BadgeKind.BUSY_PAST_CEILING,
            [_busy_sentence(status, agent_now), ceiling + "; this host never sleeps, so the work goes on."],
        ).model_copy(update={"icon_kind": BadgeKind.BUSY})

    if status.verdict is Verdict.IDLE and status.checking(agent_now):
        checking = _make(BadgeKind.IDLE, [
            "Checking: the agent has just started (or was replaced) and is looking at the box's processes for "
            "the first time; it says Idle or Busy within seconds."], offers_keep=offers_keep, label="Checking…")
        ends = checking_ends_here(status, connection)
        return checking if ends is None else checking.model_copy(update={"valid_until": ends})

    if status.verdict is Verdict.IDLE:
        sentences = ["Idle: nothing running on it counts as work."]
        if connection.state is ConnectionState.QUIET:
            sentences.append("The app stays silent on the wire so the provider can let it sleep.")
        too_short = _window_too_short(status, traits) if sleeps else None
        if too_short is not None:
            sentences.append("Note: " + _window_sentence(*too_short))
        return _make(BadgeKind.IDLE, sentences, offers_keep=offers_keep)

    if sleeps:
        not_kept = _not_kept_awake(status, traits, connection, agent_now)
        if not_kept is not None:
            reason, sentence, hint = not_kept
            extra = [_ceiling_sentence(status, connection, now_monotonic)] if offers_keep else []
            return _make(
                BadgeKind.BUSY_NOT_KEPT_AWAKE,
                [_busy_sentence(status, agent_now), sentence, *extra],
                hint=hint,
                offers_keep=offers_keep,
                reason=reason,
            )

    keeper = _keeper_sentence(traits, status) if sleeps else ""
    if sleeps and connection.platform is not None:
        clock = connection.platform
        keeper += f" The platform {stops_words(clock, clock.read_at)} as of its last reading."
        if connection.platform_note:
            keeper += f" Note: {connection.platform_note}."
    suffix = _label_suffix(traits.metering.keeper) if sleeps else ""
    if status.prompt_pending or status.awake_ceiling_exceeded:
        # A question waits only on a box that sleeps (ask mode is sent to no other); elsewhere, a note.
        kind = BadgeKind.ASKING if sleeps and status.prompt_pending else BadgeKind.BUSY_PAST_CEILING
        never = "" if sleeps else "This host never sleeps, so there is nothing to keep awake."
        past = _make(
            kind,
            [_busy_sentence(status, agent_now), _ceiling_sentence(status, connection, now_monotonic, asks=sleeps),
             keeper, never],
            hint="Click Keep awake to restart the ceiling." if kind is BadgeKind.ASKING else "",
            offers_keep=offers_keep,
            label=LABELS[kind] + suffix,
        )
        return past if sleeps else past.model_copy(update={"icon_kind": BadgeKind.BUSY})
    return _make(BadgeKind.BUSY, [_busy_sentence(status, agent_now), keeper], label=LABELS[BadgeKind.BUSY] + suffix)
