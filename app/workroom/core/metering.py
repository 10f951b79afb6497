"""How a box sleeps: one row per metering kind (docs/providers.md, "How a box sleeps").

A provider's traits name what its platform counts as activity (`IdleMetering`); everything the app decides
from that reads the kind's `MeteringRow`, never the kind itself: who keeps a busy box awake (`Keeper`), how
that is proven, which reasons can leave it "busy but not kept awake", whether the app's own bytes on the box's
wire move the provider's idle clock, and whether the app may hold a session open while the box is idle.

Each face that acts on the keeper matches over `Keeper` with `assert_never`, so a new keeper fails type
checking until every face handles it; a metering kind without a row is refused by `metering_row` (and by
`ProviderTraits`), and tests/unit/core/test_metering.py checks every kind has one. Adding a way a box sleeps
is one row here plus its tests (docs/architecture.md, "Adding a way a box sleeps").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class IdleMetering(StrEnum):
    """What the provider counts as activity when deciding to put a box to sleep."""

    NETWORK = "network"
    """Any packet on the box's link (boxd, the simulated box)."""
    REQUESTS = "requests"
    """Only inbound requests through the provider's proxy."""
    SESSIONS = "sessions"
    """An open session is activity, and the platform stops the box at a deadline that activity pushes back
    (Coder workspaces, GitHub Codespaces): the app's own session is activity too."""
    NEVER = "never"
    """The box never sleeps on its own."""


class Keeper(StrEnum):
    """Who keeps a busy box awake."""

    AGENT_HEARTBEAT = "agent_heartbeat"
    """The far-side agent's datagram to the box's gateway while its published verdict is BUSY: it goes on
    with this computer asleep, and needs no credential on the box."""
    THIS_COMPUTER = "this_computer"
    """This app, from outside the box (KeepAwake polling the provider's health page): only while the app runs
    and this computer is awake."""
    PLATFORM = "platform"
    """The platform's own keep-alive, asked through the user's logged-in CLI from this computer: its deadline
    extension where it has one (Coder), the session's traffic where its CLI reports that as activity
    (Codespaces). Only while the app runs and this computer is awake; no credential of ours on the box."""
    NOTHING_NEEDED = "nothing_needed"
    """The box never sleeps on its own."""


class Proof(StrEnum):
    """How the app learns whether the keep-awake is counted by the provider."""

    IDLE_CLOCK = "idle_clock"
    """The provider's idle clock, read without waking the box, where the provider lets the app read one
    (core.heartbeat_proof); elsewhere the keep-awake stays "unconfirmed"."""
    PLATFORM_CLOCK = "platform_clock"
    """The platform's own stop time (a deadline, or an idle timeout after the last activity), read from its
    list through its CLI without touching the box: an extension is seen when the deadline moves."""
    NOTHING_TO_PROVE = "nothing_to_prove"


class NotKeptAwakeReason(StrEnum):
    """Why a busy host that can sleep is not being kept awake (or, SLEPT_WHILE_BUSY, was not)."""

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
    PLATFORM_UNREADABLE = "platform_unreadable"
    """The platform's CLI cannot be read (not installed, not logged in, no answer): nothing extends the box."""
    PLATFORM_EXTEND_FAILING = "platform_extend_failing"
    """The platform refused or failed the extension the app asked for."""
    PLATFORM_MAXIMUM = "platform_maximum"
    """The platform's own maximum lifetime for the box is reached: no extension can pass it."""
    AWAKE_CEILING_REACHED = "awake_ceiling_reached"
    """Past the awake ceiling with nobody asked (advisory): the app stopped extending it and let go."""


SLEEPABLE_REASONS = frozenset({
    NotKeptAwakeReason.UNANSWERED_PROMPT,  # the agent's own ceiling: the same on every sleepable box
    NotKeptAwakeReason.STALLED_AGENT,  # nothing the agent does is sure while it does not tick
    NotKeptAwakeReason.SLEPT_WHILE_BUSY,
})
"""Reasons any box that sleeps can show, whoever keeps it awake."""


@dataclass(frozen=True)
class MeteringRow:
    """One way a box sleeps, as every face reads it."""

    metering: IdleMetering
    sleeps: bool
    """The provider puts an idle box to sleep (ask mode, quiet sessions and the warnings follow from this)."""
    keeper: Keeper
    proof: Proof
    not_kept_reasons: frozenset[NotKeptAwakeReason]
    """Every reason a busy box of this kind can be shown "busy but not kept awake" for."""
    own_traffic_resets_clock: bool
    """The app's own bytes on the box's wire move the provider's idle clock: its liveness pings are not sent
    while the clock is read as proof, and a reset just after them proves nothing."""
    session_while_idle: bool
    """The app may keep its session open while the box is idle (silent on the wire where the box sleeps)."""
    keeper_words: str
    """Who keeps a busy box awake, for a sentence ("kept awake by ...")."""


METERING_ROWS: Mapping[IdleMetering, MeteringRow] = MappingProxyType({row.metering: row for row in (
    MeteringRow(
        IdleMetering.NETWORK, sleeps=True, keeper=Keeper.AGENT_HEARTBEAT, proof=Proof.IDLE_CLOCK,
        not_kept_reasons=SLEEPABLE_REASONS | {
            NotKeptAwakeReason.HEARTBEAT_FAILING, NotKeptAwakeReason.HEARTBEAT_OFF,
            NotKeptAwakeReason.HEARTBEAT_NOT_SENT, NotKeptAwakeReason.AGENT_TOO_OLD,
            NotKeptAwakeReason.WINDOW_TOO_SHORT, NotKeptAwakeReason.PROVIDER_NOT_SEEING},
        own_traffic_resets_clock=True, session_while_idle=True, keeper_words="the agent's heartbeat",
    ),
    MeteringRow(
        IdleMetering.REQUESTS, sleeps=True, keeper=Keeper.THIS_COMPUTER, proof=Proof.IDLE_CLOCK,
        not_kept_reasons=SLEEPABLE_REASONS | {
            NotKeptAwakeReason.OUTSIDE_KEEPAWAKE_NOT_RUNNING, NotKeptAwakeReason.OUTSIDE_KEEPAWAKE_FAILING,
            NotKeptAwakeReason.PROVIDER_NOT_SEEING},
        # Its meter counts only requests through the provider's proxy: our SSH bytes are not seen.
        own_traffic_resets_clock=False, session_while_idle=True, keeper_words="this computer",
    ),
    MeteringRow(
        IdleMetering.SESSIONS, sleeps=True, keeper=Keeper.PLATFORM, proof=Proof.PLATFORM_CLOCK,
        not_kept_reasons=SLEEPABLE_REASONS | {
            NotKeptAwakeReason.PLATFORM_UNREADABLE, NotKeptAwakeReason.PLATFORM_EXTEND_FAILING,
            NotKeptAwakeReason.PLATFORM_MAXIMUM, NotKeptAwakeReason.AWAKE_CEILING_REACHED},
        # An open session is activity there: our session moves the platform's clock, so none is held while the
        # box is idle (sessions/idle_release.py), and while it is busy the session itself counts.
        own_traffic_resets_clock=True, session_while_idle=False,
        keeper_words="this computer, through the platform's own keep-alive",
    ),
    MeteringRow(
        IdleMetering.NEVER, sleeps=False, keeper=Keeper.NOTHING_NEEDED, proof=Proof.NOTHING_TO_PROVE,
        not_kept_reasons=frozenset(), own_traffic_resets_clock=False, session_while_idle=True,
        keeper_words="nothing (it never sleeps)",
    ),
)})
"""Every way a box sleeps."""


class UnknownMetering(LookupError):
    """A metering kind with no row: a programming error, refused loudly rather than shown as plain Busy."""


def metering_row(metering: IdleMetering | str) -> MeteringRow:
    """The row for `metering`; `UnknownMetering` when there is none (never a silent default)."""
    try:
        return METERING_ROWS[IdleMetering(metering)]
    except (KeyError, ValueError):
        raise UnknownMetering(f"no metering row for {metering!r}: add one to core.metering.METERING_ROWS") from None
