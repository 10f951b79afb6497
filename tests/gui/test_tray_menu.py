"""The tray menu as the main surface: summary line, pinned prompts with Keep awake / Let it sleep, one line
per host with one state word and how long, a submenu per host; a notification goes once answered."""

from __future__ import annotations

import time
from typing import Any

import pytest
from demo_states import AGENT_MONOTONIC, busy, every_state, make_snapshot
from gui_helpers import feed, wait_for
from PySide6.QtGui import QGuiApplication
from workroom.core.badge import BadgeKind
from workroom.core.connection import ConnectionState
from workroom.ui import tray as tray_module
from workroom.ui.tray import TrayController

pytestmark = pytest.mark.gui


def prompting(name: str, state: ConnectionState = ConnectionState.LIVE, deadline_in: float = 300) -> Any:
    return make_snapshot(name, "boxd", state, prompt=True, **busy(
        awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
        prompt_deadline=AGENT_MONOTONIC + deadline_in))


def texts(menu: Any) -> list[str]:
    return [a.text() for a in menu.actions() if a.isVisible() and not a.isSeparator()]


# The summary's word for each connection state, written out here (the app's is the state table's `counted`): a box
# asleep or let go on purpose is never counted as a host that failed to be live.
SUMMARY_WORDS = {ConnectionState.DISCONNECTED: "not connected", ConnectionState.CONNECTING: "connecting",
                 ConnectionState.HOST_KEY_QUESTION: "connecting", ConnectionState.PUSHING: "connecting",
                 ConnectionState.LOST: "lost", ConnectionState.BACKING_OFF: "lost", ConnectionState.ASLEEP: "asleep",
                 ConnectionState.UNREADABLE: "unreadable", ConnectionState.RELEASED: "let go while idle",
                 ConnectionState.ERROR: "cannot connect"}


def _summary(app: Any) -> str:
    """The summary's counts from the rows' states: live first, then the other groups in the table's order."""
    counts: dict[str, int] = {}
    for snap in app.window.model.snapshots():
        live = snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
        words = ("live" if snap.status is not None else "connecting") if live else SUMMARY_WORDS[snap.connection.state]
        counts[words] = counts.get(words, 0) + 1
    order = ["live", *dict.fromkeys(SUMMARY_WORDS[s] for s in ConnectionState if s in SUMMARY_WORDS)]
    return " · ".join(f"{counts[w]} {w}" for w in order if w in counts)


def test_summary_pinned_prompt_and_host_lines(app: Any, engine: Any) -> None:
    states = every_state()
    states.pop("asking")
    for snap in states.values():
        feed(engine, snap)
    feed(engine, prompting("render-farm"))
    tray = app.tray
    tray.refresh_texts()
    lines = texts(tray.menu)
    assert lines[0] == _summary(app) + " · render-farm needs an answer"
    assert lines[0].startswith("6 live · ") and " · 1 asleep · " in lines[0]  # asleep is counted as such
    assert lines[1].startswith("render-farm: keep it awake? · answer within")
    assert lines[2:4] == ["    Keep awake", "    Let it sleep"]
    assert "gpu-box — Busy 42 min" in lines
    assert "laptop — Idle" in lines
    assert any(x.startswith("nightly — Asleep") for x in lines)
    assert not any("·" in x for x in lines if x.startswith("gpu-box"))  # one state word, not "Busy · Busy"
    assert lines[-6:] == ["Open Workroom", "Settings…", "Connect all", "About Workroom", "Help", "Quit…"]


def test_host_submenus_offer_what_applies(app: Any, engine: Any) -> None:
    states = every_state()
    for snap in states.values():
        feed(engine, snap)
    tray = app.tray
    asleep = tray.host_menus["nightly"]
    assert asleep.connect_action.isVisible() and asleep.connect_action.text() == "Wake and connect"
    assert not tray.host_menus["gpu-box"].connect_action.isVisible()  # live: nothing to connect
    assert tray.host_menus["render-farm"].keep_action.isVisible()
    assert not tray.host_menus["laptop"].copy_action.isVisible()  # this computer: no ssh
    tray.host_menus["gpu-box"].copy_action.trigger()
    assert QGuiApplication.clipboard().text() == "ssh gpu-box.example"
    tray.host_menus["build-box"].details_action.trigger()
    assert app.window.detail.snapshot.host.name == "build-box"


def test_let_it_sleep_that_cannot_reach_the_host_leaves_the_card_with_why(app: Any, engine: Any, run: Any) -> None:
    """Let it sleep is an answer the agent must get (test_let_sleep.py drives it through a real agent): when
    there is no session to carry it, the card stays up and says so, and nothing pretends it was answered."""
    feed(engine, prompting("render-farm"))
    tray = app.tray
    assert "render-farm" in app.window.cards.cards and "render-farm" in tray.prompt_actions
    assert app.notifications.showing("prompt:render-farm")

    async def settle() -> None:
        tray.prompt_actions["render-farm"][2].trigger()
        await wait_for(lambda: app.window.cards.cards["render-farm"].error.text(), 5, "the card's error")

    run(settle())
    card = app.window.cards.cards["render-farm"]
    assert "render-farm" in card.error.text() and card.dismiss_button.isEnabled()
    assert "render-farm" in tray.prompt_actions


def test_a_prompt_answered_elsewhere_unpins_and_withdraws_too(app: Any, engine: Any) -> None:
    feed(engine, prompting("render-farm"))
    assert app.notifications.showing("prompt:render-farm")
    feed(engine, make_snapshot("render-farm", "boxd", **busy()))  # the agent says: no prompt pending any more
    assert "render-farm" not in app.tray.prompt_actions and not app.notifications.showing("prompt:render-farm")


@pytest.mark.parametrize("gone", [ConnectionState.DISCONNECTED, ConnectionState.LOST, ConnectionState.ASLEEP])
def test_a_prompt_is_shown_only_while_the_link_can_carry_the_answer(app: Any, engine: Any,
                                                                     gone: ConnectionState) -> None:
    """The session keeps the last status (prompt pending) when the link goes; nothing may offer an answer then.
    The agent still holds the prompt when the link comes back: it shows again, but is not announced again (a
    link that keeps dropping must not notify over and over for one question); a new prompt is announced."""
    tray, cards = app.tray, app.window.cards
    feed(engine, prompting("render-farm"))
    assert "render-farm" in cards.cards and "render-farm" in tray.prompt_actions
    assert "render-farm needs an answer" in tray.summary.text()
    assert "render-farm" in app.app_nap.pending and app.notifications.showing("prompt:render-farm")

    feed(engine, prompting("render-farm", gone))  # the same status and prompt, on a link that is gone
    assert "render-farm" not in cards.cards and cards.isHidden() and not cards.timer.isActive()
    tray.refresh_texts()
    lines = texts(tray.menu)
    assert "render-farm" not in tray.prompt_actions
    assert not any("keep it awake?" in x or x.strip() in ("Keep awake", "Let it sleep") for x in lines)
    assert tray.summary.text() == _summary(app)  # nobody needs an answer
    assert "live" not in tray.summary.text()
    assert "render-farm" not in app.app_nap.pending
    assert not app.notifications.showing("prompt:render-farm") and app.notifications.last_notification is None

    app.notifications.last_notification = None
    feed(engine, prompting("render-farm"))  # live again, the agent still asking with the same deadline
    card = cards.cards["render-farm"]
    assert card.isVisibleTo(app.window) and card.countdown.text().startswith("Answer within")
    assert "render-farm" in tray.prompt_actions and "render-farm needs an answer" in tray.summary.text()
    assert "render-farm" in app.app_nap.pending
    assert app.notifications.last_notification is None, "the same prompt was announced twice"

    feed(engine, prompting("render-farm", gone))
    feed(engine, prompting("render-farm", deadline_in=900))  # a later prompt: the agent asks anew
    note = app.notifications.last_notification
    assert note is not None and note[0] == "render-farm: keep it awake?"


def test_the_tray_tooltip_counts_every_host_even_when_the_worst_kind_stays(qapp: Any,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[BadgeKind] = []
    real = tray_module.tray_icon_for
    monkeypatch.setattr(tray_module, "tray_icon_for", lambda kind: drawn.append(kind) or real(kind))
    tray = TrayController()
    assert tray.icon.toolTip() == "Workroom: no hosts"
    tray.update(make_snapshot("laptop", "local"))
    tray.update(make_snapshot("build-box", "ssh", ConnectionState.LOST))
    tray.update(make_snapshot("data-box", "ssh", ConnectionState.LOST))  # the worst kind stays Offline
    assert tray.icon.toolTip() == "Workroom: build-box (Offline), data-box (Offline) need you; 3 hosts"
    tray.update(make_snapshot("data-box", "ssh", ConnectionState.LOST))  # nothing changed: nothing redrawn
    assert drawn == [BadgeKind.UNKNOWN, BadgeKind.IDLE, BadgeKind.OFFLINE]  # drawn only as the worst kind changes
    tray.remove("build-box")
    assert tray.icon.toolTip() == "Workroom: data-box (Offline) needs you; 2 hosts"
    tray.update(make_snapshot("build-box", "ssh", ConnectionState.BACKING_OFF))
    assert tray.icon.toolTip() == "Workroom: build-box (Offline), data-box (Offline) need you; 3 hosts"
    tray.remove("build-box")
    tray.remove("data-box")
    assert tray.icon.toolTip() == "Workroom: 1 host: 1 idle"  # a good state is not called "worst"


def test_the_tray_tooltip_at_start_up_counts_hosts_not_connected_yet(qapp: Any, app: Any) -> None:
    tray = TrayController()
    tray.update(make_snapshot("new-vm", "ssh", ConnectionState.DISCONNECTED))  # Unknown, as every host at start-up
    assert tray.icon.toolTip() == "Workroom: 1 host: 1 unknown"
    total = app.window.model.rowCount()  # the app as it starts: the engine's hosts, none connected yet
    assert total >= 1 and "no hosts" not in app.tray.icon.toolTip()
    assert app.tray.icon.toolTip() == f"Workroom: {total} host{'s' if total != 1 else ''}: {total} unknown"


def test_the_app_nap_hold_for_an_outside_keep_awake_ends_with_the_poll(app: Any, engine: Any) -> None:
    """A request-metered host is kept awake by this computer's polls; after Disconnect they stop while the last
    status still says busy, so nothing is left to time."""
    from dataclasses import replace

    from workroom.core.traits import REQUEST_METERED_TRAITS

    def metered(state: ConnectionState, polling: bool) -> Any:
        snap = make_snapshot("api-box", "request-metered", state, traits=REQUEST_METERED_TRAITS, **busy())
        return replace(snap, connection=snap.connection.model_copy(update={"keepawake_running": polling}))

    feed(engine, metered(ConnectionState.LIVE, polling=True))
    assert "api-box" in app.app_nap.pending
    feed(engine, metered(ConnectionState.LOST, polling=True))  # the polls go on while the link is retried
    assert "api-box" in app.app_nap.pending
    feed(engine, metered(ConnectionState.DISCONNECTED, polling=False))
    assert "api-box" not in app.app_nap.pending


def test_a_lost_host_outranks_this_computer_busy_past_an_advisory_ceiling(qapp: Any) -> None:
    """This computer never sleeps and is busy past its advisory ceiling all day: a note. A remote host that is
    lost needs the user, so the icon and the tooltip show it."""
    tray = TrayController()
    states = every_state()
    tray.update(states["busy_past_ceiling"])  # workstation, never sleeps: advisory
    assert tray.worst_kind is BadgeKind.BUSY  # nothing to keep awake: plain busy on the icon, not the clock
    assert "need" not in tray.icon.toolTip()
    tray.update(states["offline"])
    assert tray.worst_kind is BadgeKind.OFFLINE
    assert tray.icon.toolTip() == "Workroom: build-box (Offline) needs you; 2 hosts"
    tray.update(states["asking"])
    assert tray.worst_kind is BadgeKind.ASKING
    assert tray.icon.toolTip().startswith("Workroom: render-farm (Asking to keep awake), build-box (Offline) need")


def test_a_prompt_runs_out_in_the_menu_bar_with_no_new_snapshot(qapp: Any, qtbot: Any) -> None:
    """An idle box that sleeps sends nothing when its prompt's deadline passes: the tray evaluates its badge
    again at that time (one single-shot timer, no polling) and shows what the agent has done by then."""
    tray = TrayController()
    now = time.monotonic()
    # The status arrived just now; the agent's deadline is 0.4 s after its own clock then.
    snap = make_snapshot("render-farm", "boxd", now=now, prompt=True,
                         **busy(awake_seconds=4 * 3600 + 300.0, awake_ceiling_exceeded=True, ask_at_ceiling=True,
                                prompt_pending=True, prompt_deadline=AGENT_MONOTONIC + 0.4))
    tray.update(snap)
    assert tray.worst_kind is BadgeKind.ASKING and tray.expiry.isActive()
    assert tray.expiry.remainingTime() <= 450
    qtbot.waitUntil(lambda: tray.worst_kind is BadgeKind.BUSY_NOT_KEPT_AWAKE, timeout=3000)
    assert "render-farm (Busy but not kept awake) needs you" in tray.icon.toolTip()
    assert tray.host_menus["render-farm"].title().startswith("render-farm — Busy but not kept awake")
    assert not tray.expiry.isActive()  # nothing else has a time limit: no timer left running


def test_no_keep_awake_on_a_host_that_never_sleeps(qapp: Any) -> None:
    tray = TrayController()
    states = every_state()
    tray.update(states["busy_past_ceiling"])
    tray.update(states["asking"])
    assert not tray.host_menus["workstation"].keep_action.isVisible()
    assert tray.host_menus["render-farm"].keep_action.isVisible()


def test_an_asleep_box_has_one_clock_on_the_tray_and_in_its_row(qapp: object) -> None:
    """The app started after the box fell asleep: it first saw it asleep 4 min 58 s ago, while its agent was
    last heard 6 min ago. The tray says what the row says (when its agent was last heard), not a second clock
    counted from the app's start."""
    import dataclasses

    from workroom.core.last_known import LastKnown
    from workroom.ui import row_text
    from workroom.ui.tray import host_menu_text

    wall = time.time()
    record = LastKnown(doing="idle", reported="idle", since=wall - 900, seen_at=wall - 360, asleep_since=wall - 298)
    snap = dataclasses.replace(make_snapshot("nightly", "boxd", ConnectionState.ASLEEP), last_known=record)
    now = time.monotonic()
    line = host_menu_text(snap, now)
    assert line.startswith("nightly — Asleep · last known idle (6 min"), line
    assert "4 min 58 s" not in line and "last known idle (6 min" in row_text.badge_text(snap, now)
