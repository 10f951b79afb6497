"""The host list and tray render every badge state from constructed snapshots, as a user sees them."""

from __future__ import annotations

import time

import pytest
from demo_states import busy, every_state, make_snapshot
from gui_helpers import feed
from PySide6.QtCore import Qt
from workroom.core.badge import BadgeKind
from workroom.core.connection import ConnectionState
from workroom.ui.host_table_model import BADGE_KIND_ROLE, Column, HostTableModel
from workroom.ui.plain_widgets import tooltip
from workroom.ui.tray import TrayController, host_menu_text

pytestmark = pytest.mark.gui

EXPECTED_KIND = {
    "idle": BadgeKind.IDLE,
    "busy": BadgeKind.BUSY,
    "asking": BadgeKind.ASKING,
    "busy_past_ceiling": BadgeKind.BUSY_PAST_CEILING,
    "login_refused": BadgeKind.OFFLINE,
    "busy_not_kept_awake": BadgeKind.BUSY_NOT_KEPT_AWAKE,
    "heartbeat_failing": BadgeKind.BUSY_NOT_KEPT_AWAKE,
    "asleep": BadgeKind.ASLEEP,
    "offline": BadgeKind.OFFLINE,
    "unknown": BadgeKind.UNKNOWN,
    "connecting": BadgeKind.UNKNOWN,
    "host_key_question": BadgeKind.UNKNOWN,
}


def _text(model: HostTableModel, row: int, column: Column, role: int = Qt.ItemDataRole.DisplayRole) -> object:
    return model.data(model.index(row, column), role)


def test_every_state_renders_badge_icon_words_and_tooltip(qapp: object) -> None:
    now = time.monotonic()
    states = every_state(now)
    model = HostTableModel(clock=lambda: now)
    model.set_snapshots(list(states.values()))
    assert model.rowCount() == len(states)
    for row, (key, snap) in enumerate(states.items()):
        badge = snap.badge(now)
        assert badge.kind is EXPECTED_KIND[key], key
        assert _text(model, row, Column.BADGE, BADGE_KIND_ROLE) is badge.kind
        assert str(_text(model, row, Column.BADGE)).startswith(badge.label)
        tip = _text(model, row, Column.BADGE, Qt.ItemDataRole.ToolTipRole)
        assert tip == tooltip(badge.tooltip)  # the words, escaped only if they hold markup characters
        icon = _text(model, row, Column.BADGE, Qt.ItemDataRole.DecorationRole)
        assert icon is not None and not icon.isNull(), key
        assert _text(model, row, Column.NAME) == snap.host.name
        assert _text(model, row, Column.PROVIDER) == snap.host.provider
    row = list(states).index("busy")
    assert str(_text(model, row, Column.BUSY)) == "compiling: cc1plus; ssh session: ssh (10.0.0.5:22)"
    raw = str(_text(model, row, Column.BUSY, Qt.ItemDataRole.ToolTipRole)).replace("\xa0", " ")
    assert "cc1plus (pid 4121)" in raw  # the raw signal, on hover
    assert _text(model, row, Column.BUSY_FOR) == "42 min"
    assert _text(model, row, Column.CONNECTION) == "Live"
    assert _text(model, row, Column.CONNECTION, Qt.ItemDataRole.ToolTipRole) == "Live"  # the cell may be elided
    offline = list(states).index("offline")
    assert str(_text(model, offline, Column.CONNECTION)).startswith("Lost, retrying in 8 s")
    assert "connection refused" in str(_text(model, offline, Column.CONNECTION, Qt.ItemDataRole.ToolTipRole))
    heartbeat = list(states).index("heartbeat_failing")
    assert "heartbeat is failing: connection refused" in str(
        _text(model, heartbeat, Column.BADGE, Qt.ItemDataRole.ToolTipRole)).replace("\xa0", " ")


def test_asleep_offline_unknown_look_different(qapp: object) -> None:
    now = time.monotonic()
    states = every_state(now)
    model = HostTableModel(clock=lambda: now)
    model.set_snapshots([states["asleep"], states["offline"], states["unknown"]])
    images = [_text(model, r, Column.BADGE, Qt.ItemDataRole.DecorationRole).pixmap(36, 36).toImage()
              for r in range(3)]
    labels = {_text(model, r, Column.BADGE) for r in range(3)}
    assert len(labels) == 3
    assert images[0] != images[1] and images[1] != images[2] and images[0] != images[2]


def test_unanswered_prompt_alarms_only_where_the_host_can_sleep(qapp: object) -> None:
    suppressed = busy(awake_seconds=5 * 3600.0, awake_ceiling_exceeded=True, suppressed=True)
    sleepy = make_snapshot("sleepy", "boxd", **suppressed)
    never = make_snapshot("never", "ssh", **suppressed)
    assert sleepy.badge().kind is BadgeKind.BUSY_NOT_KEPT_AWAKE
    assert "nobody answered the prompt" in sleepy.badge().tooltip
    assert never.badge().kind is BadgeKind.BUSY_PAST_CEILING
    assert "never sleeps" in never.badge().tooltip


def test_row_updates_in_place(qapp: object) -> None:
    model = HostTableModel()
    model.set_snapshots([make_snapshot("a"), make_snapshot("b")])
    changed: list[int] = []
    model.dataChanged.connect(lambda tl, br: changed.append(tl.row()))
    model.update(make_snapshot("b", **busy()))
    assert changed == [1]
    assert model.rowCount() == 2
    assert _text(model, 1, Column.BADGE) == "Busy"
    model.update(make_snapshot("c", state=ConnectionState.CONNECTING))
    assert model.rowCount() == 3
    model.remove("a")
    assert [s.host.name for s in model.snapshots()] == ["b", "c"]
    assert model.row_of("c") == 1


def test_tray_icon_is_the_worst_state_and_menu_lists_hosts(qapp: object) -> None:
    tray = TrayController()
    states = every_state()
    tray.update(states["idle"])
    assert tray.worst_kind is BadgeKind.IDLE
    tray.update(states["busy"])
    assert tray.worst_kind is BadgeKind.BUSY
    tray.update(states["offline"])
    assert tray.worst_kind is BadgeKind.OFFLINE
    tray.update(states["busy_not_kept_awake"])
    assert tray.worst_kind is BadgeKind.BUSY_NOT_KEPT_AWAKE
    assert not tray.icon.icon().isNull()
    texts = [a.text() for a in tray.menu.actions()]
    assert host_menu_text(states["busy"], time.monotonic()) in texts
    assert "gpu-box — Busy 42 min" in texts
    assert {"Open Workroom", "Settings…", "Connect all", "About Workroom", "Help", "Quit…"} <= set(texts)
    tray.remove("ci-runner")
    assert tray.worst_kind is BadgeKind.OFFLINE


def test_the_tray_icon_shows_a_host_that_never_sleeps_past_its_ceiling_as_busy(qapp: object) -> None:
    """Only "this computer" busy past its ceiling (it never sleeps: nothing to keep awake): the icon is Busy, not
    the past-ceiling clock; its menu line still says past ceiling."""
    tray = TrayController()
    past = busy(awake_seconds=9 * 3600.0, awake_ceiling_exceeded=True)
    here = make_snapshot("this-computer", "local", **past)
    tray.update(here)
    assert tray.worst_kind is BadgeKind.BUSY
    assert any("Busy past ceiling" in a.text() for a in tray.menu.actions())
    tray.update(make_snapshot("nightly", "boxd", **past))  # a box that sleeps, advisory mode: the clock
    assert tray.worst_kind is BadgeKind.BUSY_PAST_CEILING


def test_window_renders_snapshots_fed_through_the_engine(window: object, engine: object, qtbot: object) -> None:
    states = every_state()
    for snap in states.values():
        feed(engine, snap)
    model = window.model  # type: ignore[attr-defined]
    assert model.rowCount() == len(states) + 1  # this computer is the first row
    window.select_host("ci-runner")  # type: ignore[attr-defined]
    detail = window.detail  # type: ignore[attr-defined]
    assert detail.title.text() == "ci-runner"
    assert "Busy but not kept awake" in detail.badge_label.text()
    assert "nobody answered the prompt" in detail.tooltip.text()
    assert detail.keep_button.isVisible()
    window.select_host("laptop")  # type: ignore[attr-defined]
    assert not detail.keep_button.isVisible()


def test_rows_that_are_not_live_show_last_known_with_its_age_and_no_reasons(qapp: object) -> None:
    now = time.monotonic()
    clock = [now]
    offline = make_snapshot("build-box", "ssh", ConnectionState.BACKING_OFF, now=now - 600, **busy())
    asleep = make_snapshot("nightly", "boxd", ConnectionState.ASLEEP, now=now - 120, **busy())
    model = HostTableModel(clock=lambda: clock[0])
    model.set_snapshots([offline, asleep])
    assert _text(model, 0, Column.BADGE) == "Offline · last known busy (10 min ago)"
    assert _text(model, 1, Column.BADGE) == "Asleep · last known busy (2 min ago)"
    for row in (0, 1):
        assert _text(model, row, Column.BUSY) == "—"
        assert _text(model, row, Column.BUSY_FOR) == "—"
    clock[0] = now + 60
    assert _text(model, 1, Column.BADGE) == "Asleep · last known busy (3 min ago)"


def test_suppressed_row_never_says_idle_beside_not_kept_awake(qapp: object) -> None:
    now = time.monotonic()
    snap = every_state(now)["busy_not_kept_awake"]
    model = HostTableModel(clock=lambda: now)
    model.set_snapshots([snap])
    texts = [str(_text(model, 0, c)) for c in Column]
    assert texts[Column.BADGE] == "Busy but not kept awake"
    assert not any(t.startswith("Idle") for t in texts)
    assert one_state_column(model)


def one_state_column(model: HostTableModel) -> bool:
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    return headers.count("State") == 1 and "Verdict" not in headers


def test_ages_tick_in_the_window_between_events(window: object, engine: object, qtbot: object) -> None:
    snap = make_snapshot("build-box", "ssh", ConnectionState.BACKING_OFF, error=None)
    feed(engine, snap)
    model = window.model  # type: ignore[attr-defined]
    row = model.row_of("build-box")
    first = model.data(model.index(row, Column.CONNECTION))
    assert str(first).startswith("Lost, retrying in")
    assert not window.cards.isVisible()  # type: ignore[attr-defined]  # no card timer to lean on
    with qtbot.waitSignal(model.dataChanged, timeout=2500):  # type: ignore[attr-defined]
        pass  # nothing is fed: only the window's own 1 Hz re-render can change the row


def test_a_host_that_never_sleeps_offers_no_keep_awake(window: object, engine: object) -> None:
    states = every_state()
    for key in ("busy_past_ceiling", "asking"):
        feed(engine, states[key])
    detail = window.detail  # type: ignore[attr-defined]
    window.select_host("workstation")  # type: ignore[attr-defined]
    assert "Busy past ceiling" in detail.badge_label.text() and "nothing to keep awake" in detail.tooltip.text()
    assert not detail.keep_button.isVisible()
    assert "Keep awake" not in [a.text() for a in window.row_menu("workstation").actions()]  # type: ignore[attr-defined]
    window.select_host("render-farm")  # type: ignore[attr-defined]
    assert detail.keep_button.isVisible() and detail.primary_button() is detail.keep_button
    assert "Keep awake" in [a.text() for a in window.row_menu("render-farm").actions()]  # type: ignore[attr-defined]


def test_a_refused_login_says_so_and_names_the_dialogs_own_field(window: object, engine: object) -> None:
    feed(engine, every_state()["login_refused"])
    window.select_host("shared-box")  # type: ignore[attr-defined]
    detail = window.detail  # type: ignore[attr-defined]
    assert detail.badge_label.text() == "<b>Login refused</b>"
    words = detail.tooltip.text()
    assert "refused the login" in words and "cannot reach" not in words
    assert "Key file field in Edit host" in words and "--identity" not in words
    detail.details_button.click()
    assert "--identity" not in detail.error_details.text() and "Key file field" in detail.error_details.text()
    model = window.model  # type: ignore[attr-defined]
    row = model.row_of("shared-box")
    assert str(_text(model, row, Column.BADGE)).startswith("Login refused")


def test_a_row_whose_prompt_runs_out_changes_with_no_new_snapshot(qapp: object, qtbot: object) -> None:
    now = time.monotonic()
    from demo_states import AGENT_MONOTONIC

    snap = make_snapshot("render-farm", "boxd", now=now, prompt=True,
                         **busy(awake_seconds=4 * 3600 + 300.0, awake_ceiling_exceeded=True, ask_at_ceiling=True,
                                prompt_pending=True, prompt_deadline=AGENT_MONOTONIC + 0.3))
    model = HostTableModel()
    model.set_snapshots([snap])
    seen: list[object] = []
    model.dataChanged.connect(lambda *_: seen.append(_text(model, 0, Column.BADGE, BADGE_KIND_ROLE)))
    assert _text(model, 0, Column.BADGE, BADGE_KIND_ROLE) is BadgeKind.ASKING and model.expiry.isActive()
    qtbot.waitUntil(lambda: BadgeKind.BUSY_NOT_KEPT_AWAKE in seen, timeout=3000)  # type: ignore[attr-defined]
    assert str(_text(model, 0, Column.BADGE)) == "Busy but not kept awake"
    assert not model.expiry.isActive()
