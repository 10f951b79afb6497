"""The badge function: every state of docs/architecture.md's badge table, plus the tray's worst-state order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from unit.core.status_factory import busy_dict, make_busy, make_status, status_dict
from workroom.core.badge import (
    BADGE_SPECS,
    SEVERITY_ORDER,
    Badge,
    BadgeKind,
    badge,
    tray_icon_kind,
    tray_summary,
    worst_badge_kind,
)
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.errors import ErrorInfo, ErrorKind, Face
from workroom.core.heartbeat_proof import IdleClockReading, judge
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.platform_clock import PlatformClock, PlatformState
from workroom.core.protocol import Status
from workroom.core.provider_specs import PROVIDER_SPECS
from workroom.core.traits import (
    BOXD_TRAITS,
    CODER_TRAITS,
    LOCAL_TRAITS,
    REQUEST_METERED_TRAITS,
    SIMBOX_TRAITS,
    SSH_TRAITS,
    ProviderTraits,
)

pytestmark = pytest.mark.unit

LIVE = ConnectionInfo(state=ConnectionState.LIVE)
QUIET = ConnectionInfo(state=ConnectionState.QUIET)
KEEPAWAKE_ON = ConnectionInfo(state=ConnectionState.LIVE, keepawake_running=True)
SHORT_WINDOW_SIMBOX = SIMBOX_TRAITS.with_idle_window(8).with_heartbeat_interval(5)
OK_WINDOW_SIMBOX = SIMBOX_TRAITS.with_idle_window(8).with_heartbeat_interval(3)


@dataclass
class Case:
    status: dict[str, Any] | None
    traits: ProviderTraits
    connection: ConnectionInfo
    kind: BadgeKind
    words: tuple[str, ...] = ()
    reason: NotKeptAwakeReason | None = None
    offers_keep: bool = False
    label_words: tuple[str, ...] = field(default=())


NOT_SEEN = judge(IdleClockReading(idle_seconds=41, window_seconds=60, read_at=500.0), interval_seconds=20,
               own_traffic_at=None, previous=None)
PENDING = {"awake_ceiling_exceeded": True, "prompt_pending": True, "prompt_deadline": 1300.0,
           "ask_at_ceiling": True, "awake_seconds": 14500}
SUPPRESSED = {"verdict": "IDLE", "classifier_verdict": "BUSY", "awake_ceiling_exceeded": True,
              "suppressed": True, "asserting": False, "awake_seconds": 15000}

CLOCK = PlatformClock(state=PlatformState.RUNNING, said="running", read_at=1000.0, deadline=1000.0 + 12 * 60,
                      max_deadline=1000.0 + 8 * 3600, can_extend=True)
STOPPED_CLOCK = PlatformClock(state=PlatformState.STOPPED, said="stopped", read_at=1000.0,
                              stop_reason="it reached its deadline (autostop)")


def platform_not_kept(reason: NotKeptAwakeReason, words: str) -> ConnectionInfo:
    return ConnectionInfo(state=ConnectionState.LIVE, platform=CLOCK, platform_not_kept=reason, platform_words=words)


CASES: dict[str, Case] = {
    "idle ssh": Case(status_dict(), SSH_TRAITS, LIVE, BadgeKind.IDLE, ("Idle",)),
    "idle boxd quiet": Case(status_dict(), BOXD_TRAITS, QUIET, BadgeKind.IDLE, ("silent on the wire",)),
    "idle short window warns": Case(status_dict(), SHORT_WINDOW_SIMBOX, LIVE, BadgeKind.IDLE, ("Note:",)),
    "busy ssh shows reason": Case(busy_dict(), SSH_TRAITS, LIVE, BadgeKind.BUSY, ("building: cargo",)),
    "busy local": Case(busy_dict(keep_awake=None), LOCAL_TRAITS, LIVE, BadgeKind.BUSY),
    "busy boxd heartbeat": Case(busy_dict(), BOXD_TRAITS, LIVE, BadgeKind.BUSY, ("heartbeat (every 1 min)",)),
    "busy simbox ok window": Case(busy_dict(keep_awake={"interval_seconds": 3, "enabled": True}),
                                  OK_WINDOW_SIMBOX, LIVE, BadgeKind.BUSY),
    # A host that never sleeps has nothing to keep awake: the ceiling there is a note, with no Keep awake.
    "past ceiling advisory": Case(busy_dict(awake_ceiling_exceeded=True, awake_seconds=15000), SSH_TRAITS,
                                  LIVE, BadgeKind.BUSY_PAST_CEILING, ("4 h awake ceiling", "nothing to keep awake")),
    "past ceiling advisory boxd": Case(busy_dict(awake_ceiling_exceeded=True, awake_seconds=15000), BOXD_TRAITS,
                                       LIVE, BadgeKind.BUSY_PAST_CEILING, ("4 h awake ceiling",), offers_keep=True),
    "prompt pending boxd": Case(busy_dict(**PENDING), BOXD_TRAITS, LIVE, BadgeKind.ASKING,
                                ("Keep awake within 5 min",), offers_keep=True),
    "prompt pending on a host that never sleeps is a note": Case(
        busy_dict(**PENDING), SSH_TRAITS, LIVE, BadgeKind.BUSY_PAST_CEILING, ("never sleeps",)),
    "suppressed boxd": Case(busy_dict(**SUPPRESSED), BOXD_TRAITS, LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE,
                            ("nobody answered",), NotKeptAwakeReason.UNANSWERED_PROMPT, offers_keep=True),
    "suppressed ssh is not alarming": Case(busy_dict(**SUPPRESSED), SSH_TRAITS, LIVE,
                                           BadgeKind.BUSY_PAST_CEILING, ("never sleeps",)),
    "stalled boxd": Case(busy_dict(stalled=True), BOXD_TRAITS, LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE,
                         ("stopped checking",), NotKeptAwakeReason.STALLED_AGENT),
    "stalled ssh": Case(busy_dict(stalled=True), SSH_TRAITS, LIVE, BadgeKind.UNKNOWN, ("out of date",)),
    "stalled idle boxd": Case(status_dict(stalled=True), BOXD_TRAITS, LIVE, BadgeKind.UNKNOWN),
    "heartbeat failing": Case(
        busy_dict(keep_awake={"interval_seconds": 60, "enabled": True, "error": "no default route"}),
        BOXD_TRAITS, LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE, ("no default route",),
        NotKeptAwakeReason.HEARTBEAT_FAILING),
    "heartbeat failing on ssh is fine": Case(
        busy_dict(keep_awake={"interval_seconds": 60, "enabled": True, "error": "no default route"}),
        SSH_TRAITS, LIVE, BadgeKind.BUSY),
    "heartbeat off": Case(busy_dict(keep_awake={"interval_seconds": 60, "enabled": False}), BOXD_TRAITS,
                          LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE, ("switched off",),
                          NotKeptAwakeReason.HEARTBEAT_OFF),
    "heartbeat not sent": Case(busy_dict(asserting=False), BOXD_TRAITS, LIVE,
                               BadgeKind.BUSY_NOT_KEPT_AWAKE, ("not sending",),
                               NotKeptAwakeReason.HEARTBEAT_NOT_SENT),
    "agent too old (no keep_awake)": Case(busy_dict(keep_awake=None), BOXD_TRAITS, LIVE,
                                          BadgeKind.BUSY_NOT_KEPT_AWAKE, ("too old",),
                                          NotKeptAwakeReason.AGENT_TOO_OLD),
    "agent too old (protocol 0)": Case(busy_dict(agent={"version": "0.0.1", "protocol": 0, "build": "x"}),
                                       SIMBOX_TRAITS, LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE, ("too old",),
                                       NotKeptAwakeReason.AGENT_TOO_OLD),
    "agent too old on ssh is fine": Case(busy_dict(keep_awake=None), SSH_TRAITS, LIVE, BadgeKind.BUSY),
    "window too short": Case(busy_dict(keep_awake={"interval_seconds": 5, "enabled": True}),
                             SHORT_WINDOW_SIMBOX, LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE,
                             ("idle window (8 s)", "every 5 s"), NotKeptAwakeReason.WINDOW_TOO_SHORT),
    "window too short from traits when agent silent on interval": Case(
        busy_dict(), SIMBOX_TRAITS.with_idle_window(100), LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE,
        ("1 min 40 s",), NotKeptAwakeReason.WINDOW_TOO_SHORT),
    "not kept awake with prompt still offers keep": Case(
        busy_dict(keep_awake=None, **PENDING), BOXD_TRAITS, LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE,
        ("too old", "Keep awake within"), NotKeptAwakeReason.AGENT_TOO_OLD, offers_keep=True),
    "request-metered busy kept by this computer": Case(
        busy_dict(keep_awake=None), REQUEST_METERED_TRAITS, KEEPAWAKE_ON, BadgeKind.BUSY,
        ("kept awake by this computer while the app runs",), label_words=("kept awake by this computer",)),
    "request-metered past ceiling kept by this computer": Case(
        busy_dict(keep_awake=None, awake_ceiling_exceeded=True, awake_seconds=15000),
        REQUEST_METERED_TRAITS, KEEPAWAKE_ON,
        BadgeKind.BUSY_PAST_CEILING, ("kept awake by this computer",), offers_keep=True,
        label_words=("kept awake by this computer",)),
    "request-metered busy, keep-awake not running": Case(
        busy_dict(keep_awake=None), REQUEST_METERED_TRAITS, LIVE, BadgeKind.BUSY_NOT_KEPT_AWAKE,
        ("not sending them",), NotKeptAwakeReason.OUTSIDE_KEEPAWAKE_NOT_RUNNING),
    "request-metered busy, keep-awake failing": Case(
        busy_dict(keep_awake=None), REQUEST_METERED_TRAITS,
        ConnectionInfo(state=ConnectionState.LIVE, keepawake_running=True, keepawake_error="HTTP 502"),
        BadgeKind.BUSY_NOT_KEPT_AWAKE, ("HTTP 502",), NotKeptAwakeReason.OUTSIDE_KEEPAWAKE_FAILING),
    "provider not seeing the heartbeat": Case(
        busy_dict(), BOXD_TRAITS, ConnectionInfo(state=ConnectionState.LIVE, heartbeat_proof=NOT_SEEN),
        BadgeKind.BUSY_NOT_KEPT_AWAKE, ("not seeing the heartbeat (idle 41 s of a 60 s window)",),
        NotKeptAwakeReason.PROVIDER_NOT_SEEING),
    "provider not seeing this computer's polls": Case(
        busy_dict(keep_awake=None), REQUEST_METERED_TRAITS,
        ConnectionInfo(state=ConnectionState.LIVE, keepawake_running=True, heartbeat_proof=NOT_SEEN),
        BadgeKind.BUSY_NOT_KEPT_AWAKE, ("idle 41 s",), NotKeptAwakeReason.PROVIDER_NOT_SEEING),
    "coder busy kept through its platform": Case(
        busy_dict(keep_awake=None), CODER_TRAITS, ConnectionInfo(state=ConnectionState.LIVE, platform=CLOCK),
        BadgeKind.BUSY, ("stops in 12 min", "nothing keeps it awake while this mac sleeps"),
        label_words=("kept awake by this computer; nothing keeps it awake while this Mac sleeps",)),
    "coder busy, its CLI unreadable": Case(
        busy_dict(keep_awake=None), CODER_TRAITS,
        platform_not_kept(NotKeptAwakeReason.PLATFORM_UNREADABLE, "coder says: You are not logged in"),
        BadgeKind.BUSY_NOT_KEPT_AWAKE, ("Nothing keeps it awake: coder says: You are not logged in", "coder login"),
        NotKeptAwakeReason.PLATFORM_UNREADABLE),
    "coder busy, extension refused": Case(
        busy_dict(keep_awake=None), CODER_TRAITS,
        platform_not_kept(NotKeptAwakeReason.PLATFORM_EXTEND_FAILING, "coder says: permission denied"),
        BadgeKind.BUSY_NOT_KEPT_AWAKE, ("permission denied",), NotKeptAwakeReason.PLATFORM_EXTEND_FAILING),
    "coder busy, platform maximum": Case(
        busy_dict(keep_awake=None), CODER_TRAITS,
        platform_not_kept(NotKeptAwakeReason.PLATFORM_MAXIMUM, "the platform's maximum for this run is reached"),
        BadgeKind.BUSY_NOT_KEPT_AWAKE, ("maximum",), NotKeptAwakeReason.PLATFORM_MAXIMUM),
    "coder let go, busy past an advisory ceiling": Case(
        busy_dict(keep_awake=None, awake_ceiling_exceeded=True, awake_seconds=15000), CODER_TRAITS,
        ConnectionInfo(state=ConnectionState.RELEASED, platform=CLOCK), BadgeKind.BUSY_NOT_KEPT_AWAKE,
        ("stopped keeping it awake", "stops in 12 min"), NotKeptAwakeReason.AWAKE_CEILING_REACHED, offers_keep=True),
    "coder let go while idle": Case(
        status_dict(keep_awake=None), CODER_TRAITS, ConnectionInfo(state=ConnectionState.RELEASED, platform=CLOCK),
        BadgeKind.IDLE, ("let go of its session", "stops in 12 min")),
    "coder stopped by its platform": Case(
        None, CODER_TRAITS, ConnectionInfo(state=ConnectionState.ASLEEP, platform=STOPPED_CLOCK), BadgeKind.ASLEEP,
        ("the platform stopped it: it reached its deadline (autostop)",)),
    "request-metered idle": Case(status_dict(keep_awake=None), REQUEST_METERED_TRAITS, LIVE, BadgeKind.IDLE),
    "asleep": Case(None, BOXD_TRAITS, ConnectionInfo(state=ConnectionState.ASLEEP, wake_seconds=0.8),
                   BadgeKind.ASLEEP, ("put this box to sleep", "0.8 s", "Connecting wakes it")),
    "asleep, suspended while busy": Case(
        None, REQUEST_METERED_TRAITS, ConnectionInfo(state=ConnectionState.ASLEEP, suspended_while_busy=True),
        BadgeKind.ASLEEP, ("suspended while", "only while the app runs", "Wake and connect to see what survived"),
        NotKeptAwakeReason.SLEPT_WHILE_BUSY),
    "lost with error": Case(
        busy_dict(), BOXD_TRAITS,
        ConnectionInfo(state=ConnectionState.LOST,
                       error=ErrorInfo(title="Connection lost", message="No reply for 10 s.", hint="Check it.")),
        BadgeKind.OFFLINE, ("Connection lost: No reply for 10 s.", "Check it.")),
    "backing off": Case(None, SSH_TRAITS, ConnectionInfo(state=ConnectionState.BACKING_OFF),
                        BadgeKind.OFFLINE, ("keep trying",)),
    "login refused": Case(None, SSH_TRAITS, ConnectionInfo(
        state=ConnectionState.ERROR, error=ErrorInfo(title="Login refused", message="h:22 did not accept user 'u'.",
                                                     hint="(--identity FILE)", kind=ErrorKind.LOGIN_REFUSED)),
        BadgeKind.OFFLINE, ("refused the login", "did not accept user", "Key file field in Edit host"),
        label_words=("Login refused",)),
    "error": Case(None, SSH_TRAITS, ConnectionInfo(
        state=ConnectionState.ERROR, error=ErrorInfo(title="No python3", message="python3 was not found.")),
        BadgeKind.OFFLINE, ("python3 was not found",)),
    "disconnected": Case(None, SSH_TRAITS, ConnectionInfo(), BadgeKind.UNKNOWN, ("Not connected",)),
    "a silent agent (no heartbeat report) boxd": Case(
        busy_dict(), BOXD_TRAITS, ConnectionInfo(state=ConnectionState.LIVE, agent_silent_since=900.0),
        BadgeKind.BUSY_NOT_KEPT_AWAKE, ("no heartbeat report", "may be frozen"), NotKeptAwakeReason.STALLED_AGENT),
    "provider unreadable": Case(None, SIMBOX_TRAITS, ConnectionInfo(
        state=ConnectionState.UNREADABLE, error=ErrorInfo(title="Could not read the provider",
                                                           message="The health page: connection refused.")),
        BadgeKind.UNKNOWN, ("could not read the provider: the health page: connection refused", "may be asleep"),
        label_words=("could not read the provider",)),
    "connecting": Case(None, SSH_TRAITS, ConnectionInfo(state=ConnectionState.CONNECTING), BadgeKind.UNKNOWN),
    "host key question": Case(None, SSH_TRAITS, ConnectionInfo(
        state=ConnectionState.HOST_KEY_QUESTION, host_key_fingerprint="SHA256:abc"), BadgeKind.UNKNOWN,
        ("SHA256:abc",)),
    "pushing": Case(None, SSH_TRAITS, ConnectionInfo(state=ConnectionState.PUSHING), BadgeKind.UNKNOWN,
                    ("Installing",)),
    "live, no status yet": Case(None, SSH_TRAITS, LIVE, BadgeKind.UNKNOWN, ("first status",)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_badge_table(case: Case) -> None:
    status = None if case.status is None else Status.model_validate(case.status)
    result = badge(status, case.traits, case.connection, now_monotonic=None)
    assert result.kind is case.kind, result
    assert result.reason is case.reason, result
    if result.reason is not None:  # every reason a badge gives is one its metering's row declares
        assert result.reason in case.traits.metering.not_kept_reasons, (result.reason, case.traits.idle_metering)
    assert result.offers_keep is case.offers_keep, result
    for words in case.words:
        assert words.lower() in result.tooltip.lower(), (words, result.tooltip)
    for words in case.label_words:
        assert words in result.label, (words, result.label)
    assert result.tooltip.strip() and result.label.strip()


def test_every_badge_kind_and_reason_is_covered_by_the_table() -> None:
    kinds = {case.kind for case in CASES.values()}
    reasons = {case.reason for case in CASES.values()} - {None}
    assert kinds == set(BadgeKind)
    assert reasons == set(NotKeptAwakeReason)


@pytest.mark.parametrize("kind", [k for k, s in PROVIDER_SPECS.items() if not s.traits.metering.sleeps])
def test_never_not_kept_awake_on_hosts_that_never_sleep(kind: str) -> None:
    traits = PROVIDER_SPECS[kind].traits
    hostile = [
        busy_dict(**SUPPRESSED),
        busy_dict(stalled=True),
        busy_dict(keep_awake=None),
        busy_dict(keep_awake={"interval_seconds": 60, "enabled": True, "error": "boom"}),
        busy_dict(asserting=False),
    ]
    for data in hostile:
        result = badge(Status.model_validate(data), traits, LIVE)
        assert result.kind is not BadgeKind.BUSY_NOT_KEPT_AWAKE, (kind, data, result)


def test_prompt_countdown_uses_this_computers_clock_since_the_status_arrived() -> None:
    status = make_busy(**PENDING)  # agent monotonic 1000, deadline 1300: 5 min left at arrival
    connection = ConnectionInfo(state=ConnectionState.LIVE, status_received_monotonic=50.0)
    later = badge(status, BOXD_TRAITS, connection, now_monotonic=50.0 + 240)
    assert "within 1 min" in later.tooltip and later.kind is BadgeKind.ASKING


def test_a_prompt_badge_is_true_until_its_deadline_then_the_box_is_not_kept_awake() -> None:
    """Nothing new is heard from an idle box that sleeps: the badge says when it stops being true, and past
    that time it says what the agent's rule has done by then (an unanswered prompt lets the box sleep)."""
    status = make_busy(**PENDING)
    connection = ConnectionInfo(state=ConnectionState.LIVE, status_received_monotonic=50.0)
    asking = badge(status, BOXD_TRAITS, connection, now_monotonic=60.0)
    assert asking.kind is BadgeKind.ASKING and asking.valid_until == pytest.approx(50.0 + 300)
    gone = badge(status, BOXD_TRAITS, connection, now_monotonic=50.0 + 300)
    assert gone.kind is BadgeKind.BUSY_NOT_KEPT_AWAKE and gone.reason is NotKeptAwakeReason.UNANSWERED_PROMPT
    assert gone.valid_until is None and "nobody answered" in gone.tooltip
    assert badge(make_busy(), BOXD_TRAITS, connection, now_monotonic=60.0).valid_until is None
    # Without knowing when the status arrived there is no deadline on this computer's clock to keep.
    assert badge(status, BOXD_TRAITS, LIVE, now_monotonic=1e9).kind is BadgeKind.ASKING


def test_a_refused_login_advises_each_face_in_its_own_terms() -> None:
    error = ErrorInfo(title="Login refused", message="h:22 did not accept user 'u'.",
                      hint="Check which key to use (--identity FILE or IdentityFile in ~/.ssh/config).",
                      kind=ErrorKind.LOGIN_REFUSED)
    connection = ConnectionInfo(state=ConnectionState.ERROR, error=error)
    app = badge(None, SSH_TRAITS, connection)
    cli = badge(None, SSH_TRAITS, connection, face=Face.CLI)
    assert app.label == cli.label == "Login refused"
    assert "cannot reach" not in app.tooltip and "cannot reach" not in cli.tooltip
    assert "Key file field in Edit host" in app.hint and "--identity" not in app.tooltip
    assert "--identity FILE" in cli.hint


def test_tooltip_lists_at_most_three_reasons() -> None:
    status = make_busy(busy_reasons=[f"cpu: job{i} (pid {i})" for i in range(5)])
    result = badge(status, SSH_TRAITS, LIVE)
    assert "job2" in result.tooltip and "job3" not in result.tooltip and "2 more" in result.tooltip


def test_badge_is_plain_data() -> None:
    result = badge(make_status(), SSH_TRAITS, LIVE)
    assert Badge.model_validate_json(result.model_dump_json()) == result


def test_worst_state_order() -> None:
    assert SEVERITY_ORDER[0] is BadgeKind.IDLE
    assert SEVERITY_ORDER[-1] is BadgeKind.BUSY_NOT_KEPT_AWAKE
    assert worst_badge_kind([BadgeKind.IDLE, BadgeKind.OFFLINE, BadgeKind.BUSY]) is BadgeKind.OFFLINE
    assert worst_badge_kind([BadgeKind.ASLEEP, BadgeKind.BUSY_NOT_KEPT_AWAKE]) is BadgeKind.BUSY_NOT_KEPT_AWAKE
    assert worst_badge_kind([]) is BadgeKind.UNKNOWN
    assert len({k.spec.rank for k in BadgeKind}) == len(BadgeKind)


def test_what_needs_the_user_outranks_every_note() -> None:
    """This computer busy past an advisory ceiling all day must not hide a lost host (it used to)."""
    assert worst_badge_kind([BadgeKind.BUSY_PAST_CEILING, BadgeKind.OFFLINE]) is BadgeKind.OFFLINE
    assert worst_badge_kind([BadgeKind.OFFLINE, BadgeKind.ASKING]) is BadgeKind.ASKING
    needs = [spec.rank for spec in BADGE_SPECS.values() if spec.needs_user]
    notes = [spec.rank for spec in BADGE_SPECS.values() if not spec.needs_user]
    assert min(needs) > max(notes)
    assert {k for k, spec in BADGE_SPECS.items() if spec.needs_user} == {
        BadgeKind.OFFLINE, BadgeKind.ASKING, BadgeKind.BUSY_NOT_KEPT_AWAKE}


def test_a_host_that_never_sleeps_past_its_ceiling_is_plain_busy_on_the_tray_icon() -> None:
    """This computer (and any host that never sleeps) busy past its ceiling all day: its row says so, but it has
    nothing to keep awake and nothing to ask, so the tray's icon shows it as busy, not the past-ceiling clock. A
    box that sleeps past an advisory ceiling keeps the clock."""
    past = make_busy(awake_seconds=9 * 3600.0, awake_ceiling_exceeded=True)
    for traits in (LOCAL_TRAITS, SSH_TRAITS):
        here = badge(past, traits, LIVE)
        assert here.kind is BadgeKind.BUSY_PAST_CEILING and here.icon_kind is BadgeKind.BUSY
        assert tray_icon_kind([here, badge(make_status(), SSH_TRAITS, LIVE)]) is BadgeKind.BUSY
    sleeps = badge(past, BOXD_TRAITS, LIVE)
    assert sleeps.kind is BadgeKind.BUSY_PAST_CEILING and sleeps.icon_kind is None
    assert tray_icon_kind([badge(past, LOCAL_TRAITS, LIVE), sleeps]) is BadgeKind.BUSY_PAST_CEILING
    assert tray_icon_kind([]) is BadgeKind.UNKNOWN


def test_one_spec_row_per_kind() -> None:
    assert set(BADGE_SPECS) == set(BadgeKind)
    assert all(spec.kind is kind for kind, spec in BADGE_SPECS.items())
    assert len({spec.icon for spec in BADGE_SPECS.values()}) == len(BadgeKind)
    assert len({spec.label for spec in BADGE_SPECS.values()}) == len(BadgeKind)


def _badge(kind: BadgeKind, label: str | None = None) -> Badge:
    return Badge(kind=kind, label=label or BADGE_SPECS[kind].label, tooltip="t")


def test_the_tray_tooltip_names_who_needs_the_user() -> None:
    assert tray_summary({}) == "Workroom: no hosts"
    fine = {"laptop": _badge(BadgeKind.BUSY_PAST_CEILING), "a": _badge(BadgeKind.IDLE), "b": _badge(BadgeKind.IDLE)}
    assert tray_summary(fine) == "Workroom: 3 hosts: 1 busy past ceiling, 2 idle"
    lost = {**fine, "box2": _badge(BadgeKind.OFFLINE, "Login refused"), "box1": _badge(BadgeKind.ASKING)}
    assert tray_summary(lost) == "Workroom: box1 (Asking to keep awake), box2 (Login refused) need you; 5 hosts"
    assert "worst" not in tray_summary(fine) + tray_summary(lost)
    one = {"box2": _badge(BadgeKind.OFFLINE)}
    assert tray_summary(one) == "Workroom: box2 (Offline) needs you; 1 host"


def test_a_fresh_agent_still_checking_is_never_shown_idle() -> None:
    """A fresh agent (a start, a replacement) says `checking` until its first look is done: its IDLE is no
    judgement yet, so every face shows "Checking…"; a BUSY it already sees is shown as busy."""
    heard = QUIET.model_copy(update={"status_received_monotonic": 50.0})
    fresh = make_status(monotonic=1000.0, checking_until=1005.0)  # sent 5 s before its first look ends
    checking = badge(fresh, SIMBOX_TRAITS, heard, now_monotonic=52.0)
    assert checking.kind is BadgeKind.IDLE and checking.label == "Checking…"
    assert checking.tooltip.startswith("Checking:") and "looking at the box's processes" in checking.tooltip
    assert checking.valid_until == 55.0  # the faces look again when it ends: no event comes for it
    assert badge(fresh, SIMBOX_TRAITS, heard, now_monotonic=55.5).label == "Idle"
    assert badge(make_status(checking_until=900.0), SIMBOX_TRAITS, QUIET).label == "Idle"  # an older agent
    assert badge(make_status(), SIMBOX_TRAITS, QUIET).label == "Idle"  # an agent from before the field
    busy = badge(make_busy(checking_until=1005.0), SSH_TRAITS, LIVE)
    assert busy.kind is BadgeKind.BUSY


def test_a_replaced_agent_is_said_for_a_while_on_every_face() -> None:
    """A connect that replaced the agent (it stopped answering): the badge's sentences lead with it and its note
    ("agent replaced at 14:02") is what the row, the tray and the CLI add beside the state, for ten minutes."""
    from workroom.core.connection import REPLACED_ACTIONS, REPLACED_SHOWN_SECONDS, AgentReplaced

    replaced = AgentReplaced(at_clock="14:02", at_monotonic=500.0, why=REPLACED_ACTIONS["replaced"])
    connection = QUIET.model_copy(update={"agent_replaced": replaced})
    shown = badge(make_status(), SIMBOX_TRAITS, connection, now_monotonic=560.0)
    assert shown.note == "agent replaced at 14:02"
    assert shown.tooltip.startswith("The agent stopped answering; the app replaced it at 14:02. Idle")
    later = badge(make_status(), SIMBOX_TRAITS, connection, now_monotonic=500.0 + REPLACED_SHOWN_SECONDS + 1)
    assert later.note == "" and "replaced" not in later.tooltip
    assert badge(make_status(), SIMBOX_TRAITS, QUIET, now_monotonic=560.0).note == ""
