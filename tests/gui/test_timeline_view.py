"""The why-awake section of the detail panel against this computer's real agent: the strip fills from the
agent's record, the day is said in words, a price gives a cost, and a "never work" name reaches the agent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from gui_helpers import OrphanJob, wait_for
from PySide6.QtCore import Qt
from workroom.core.connection import ConnectionState
from workroom.core.timeline import SegmentKind
from workroom.storage import load_hosts
from workroom.ui.timeline_view import colour_for

pytestmark = [pytest.mark.gui]


@pytest.fixture
def cpu_job() -> Any:
    job = OrphanJob()  # a user's job, not the app's child (the local agent leaves the app's tree out)
    yield job
    job.stop()


@pytest.mark.integration
@pytest.mark.slow
def test_strip_words_cost_and_never_work_with_a_real_agent(window: Any, engine: Any, run: Any, qtbot: Any,
                                                          cpu_job: Any) -> None:
    name = engine.hosts.hosts[0].name
    view = window.timeline
    window.select_host(name)

    async def busy_recorded() -> None:
        window.controller.connect_host(name)
        await wait_for(lambda: window.model.snapshot(name).connection.state is ConnectionState.LIVE, 30,
                       "this computer to go live")

        def busy_seconds() -> float:
            qtbot.mouseClick(view.refresh_button, Qt.MouseButton.LeftButton)
            s = view.summary
            return s.totals.get(SegmentKind.BUSY, 0.0) if s is not None else 0.0

        await wait_for(lambda: busy_seconds() >= 3, 30, "the strip to show a few seconds of busy time")

    run(busy_recorded(), timeout=70)
    summary = view.summary
    assert summary is not None and view.isEnabled()
    busy = [seg for seg in summary.segments if seg.kind is SegmentKind.BUSY]
    assert busy and busy[-1].end == pytest.approx(summary.end, abs=5)
    assert summary.segments[0].kind is SegmentKind.OFFLINE  # before this agent started: no record
    assert view.strip.segment_at(view.strip.width() - 2) is not None
    assert colour_for(busy[-1]) != colour_for(summary.segments[0])
    # A record begun seconds ago: the strip shows its last 15 min, not a day of no record.
    assert view.headline.text().startswith("Awake ") and "in the last 15 min" in view.headline.text()
    assert view.title.text() == "<b>What kept it awake (last 15 min)</b>"
    assert "hourly price" in view.cost.text()

    view.price.setValue(0.36)
    view.price.editingFinished.emit()
    assert view.cost.text().startswith("Estimated cost ≈") and "at 0.36 an hour" in view.cost.text()
    saved = load_hosts(engine.paths).value.require(name)
    assert saved.hourly_price == pytest.approx(0.36)

    async def listed() -> None:
        view.never_input.setText("watch")
        qtbot.mouseClick(view.never_add, Qt.MouseButton.LeftButton)
        await wait_for(lambda: view.never_list.count() == 1, 15, "the never-work list to show the new name")

    run(listed(), timeout=20)
    assert view.never_list.item(0).text() == "watch"
    status = engine.session(name).status
    assert status is not None
    files = list(engine.paths.state_dir.rglob("*.exclusions"))
    assert files and json.loads(files[0].read_text())["names"] == ["watch"]

    # Select it, let a second or two of the window's ticks re-render the panel, then Remove: it must go.
    view.never_list.setCurrentRow(0)

    async def removed() -> None:
        for _ in range(3):
            window._tick()
            await asyncio.sleep(0.1)
        assert view.never_list.currentItem() is not None, "a re-render dropped the selection"
        qtbot.mouseClick(view.never_remove, Qt.MouseButton.LeftButton)
        await wait_for(lambda: view.never_list.count() == 0, 15, "the never-work list to be empty")

    run(removed(), timeout=20)
    assert json.loads(files[0].read_text())["names"] == []


@pytest.mark.parametrize(("provider", "state", "busy_now", "asks"), [
    ("ssh", ConnectionState.LIVE, False, True),
    ("ssh", ConnectionState.LIVE, True, True),
    ("boxd", ConnectionState.LIVE, True, True),
    ("boxd", ConnectionState.LIVE, False, False),  # a reply's bytes would restart the box's idle clock
    ("boxd", ConnectionState.QUIET, False, False),
    ("ssh", ConnectionState.QUIET, True, False),
    ("ssh", ConnectionState.BACKING_OFF, False, False),
])
def test_the_view_asks_unprompted_only_where_it_cannot_keep_a_box_up(provider: str, state: ConnectionState,
                                                                       busy_now: bool, asks: bool) -> None:
    from demo_states import busy, make_snapshot
    from workroom.ui.timeline_view import may_ask_unprompted

    snapshot = make_snapshot("box", provider, state, **(busy() if busy_now else {}))
    assert may_ask_unprompted(snapshot) is asks


class RecordSource:
    """The controller's agent calls the view makes (its record, its "never work" names), answered from a fixed
    reply and counted (the view's logic under test: how it moves "now" on without asking again; the real agent's
    record is the test above's)."""

    def __init__(self, reply: Any) -> None:
        from workroom.core.protocol import UserExclusions
        from workroom.ui.tasks import TaskKeeper

        self.reply, self.asked = reply, 0
        self.tasks = TaskKeeper(lambda name, error: None)
        self._never = UserExclusions(names=())

    def agent(self, name: str) -> Any:
        from workroom.core.protocol import Method

        async def call(method: Method, /, **params: Any) -> Any:
            if method is Method.TIMELINE:
                self.asked += 1
                return self.reply
            assert method is Method.EXCLUSIONS
            return self._never

        return call

    def set_hourly_price(self, name: str, price: float | None) -> None:
        pass


def test_now_and_totals_advance_locally_and_short_work_shows(qtbot: Any, run: Any) -> None:
    from demo_states import busy, make_snapshot
    from workroom.core.protocol import TimelineReply, TimelineSpan
    from workroom.ui.timeline_view import MIN_SPAN_PX, TimelineView

    wall = 1_764_590_000.0
    spans = (TimelineSpan.model_validate({"start": wall - 7200, "end": wall - 3600, "state": "idle", "class": "",
                                          "subject": ""}),
             TimelineSpan.model_validate({"start": wall - 3600, "end": wall - 3420, "state": "busy", "class": "cpu",
                                          "subject": "cc1"}),  # three minutes of work: under a pixel of 24 h
             TimelineSpan.model_validate({"start": wall - 3420, "end": wall, "state": "idle", "class": "",
                                          "subject": ""}))
    reply = TimelineReply.model_validate({"now": wall, "spans": [s.model_dump(by_alias=True) for s in spans]})
    source = RecordSource(reply)
    clock = [100.0]
    view = TimelineView(source, clock=lambda: clock[0], wall=lambda: wall)  # type: ignore[arg-type]
    qtbot.addWidget(view)
    view.resize(360, 400)
    view.show()
    snap = make_snapshot("laptop", "local", ConnectionState.LIVE, **busy(verdict="IDLE", classifier_verdict="IDLE",
                                                                          busy_reasons=[]))

    async def load() -> None:
        view.show_snapshot(snap)
        await wait_for(lambda: view.summary is not None, 5, "the record")

    run(load())
    assert source.asked == 1
    idle_before = view.summary.totals[SegmentKind.IDLE]  # type: ignore[union-attr]
    now_before = view.summary.end  # type: ignore[union-attr]
    clock[0] += 600  # ten minutes with the panel open, the window's tick re-rendering
    view.show_snapshot(snap)
    assert source.asked == 1, "the record was fetched again"
    assert view.summary.end == pytest.approx(now_before + 600)  # type: ignore[union-attr]
    assert view.summary.totals[SegmentKind.IDLE] == pytest.approx(idle_before + 600)  # type: ignore[union-attr]
    # Disconnected: "now" still moves, the time since is no record (not idle on the app's word).
    gone = make_snapshot("laptop", "local", ConnectionState.DISCONNECTED)
    view.show_snapshot(gone)
    clock[0] += 60
    view.show_snapshot(gone)
    assert view.summary.totals[SegmentKind.IDLE] == pytest.approx(idle_before + 600)  # type: ignore[union-attr]
    assert view.summary.end == pytest.approx(now_before + 660)  # type: ignore[union-attr]
    # The three minutes of work are drawn at least MIN_SPAN_PX wide, in the busy colour.
    image = view.strip.grab().toImage()
    work = colour_for(next(s for s in view.summary.segments if s.kind is SegmentKind.BUSY))  # type: ignore[union-attr]
    row = image.height() // 2
    drawn = sum(1 for x in range(image.width()) if image.pixelColor(x, row).rgb() == work.rgb())
    assert drawn >= MIN_SPAN_PX - 1, drawn


def test_the_words_name_only_a_control_that_works(qtbot: Any) -> None:
    """"Connect (or press Refresh)…" sat beside a disabled Refresh. With no record yet, the words name Refresh only
    while it is enabled, and otherwise the state's own control, as the detail panel labels it."""
    from demo_states import make_snapshot
    from workroom.ui.timeline_view import TimelineView

    view = TimelineView(RecordSource(None))  # type: ignore[arg-type]
    qtbot.addWidget(view)
    expected = {ConnectionState.DISCONNECTED: "Connect to see what kept this host awake.",
                ConnectionState.ASLEEP: "Wake and connect to see what kept this host awake.",
                ConnectionState.BACKING_OFF: "Retry now to see what kept this host awake.",
                ConnectionState.CONNECTING: "Once it is connected, Refresh shows what kept this host awake.",
                ConnectionState.QUIET: "Press Refresh to see what kept this host awake."}
    for state, words in expected.items():
        view.show_snapshot(make_snapshot("box1", "boxd", state))
        assert view.headline.text() == words, state
        assert view.refresh_button.isEnabled() is (state is ConnectionState.QUIET), state


def test_a_change_too_soon_after_a_reply_is_asked_for_once_due(qtbot: Any, run: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The record fetched as a box connected (empty: its agent had just started) stayed the one shown through the
    whole job that followed, because each change came within a minute of the last reply: the strip said "nothing
    recorded" for a box busy for minutes. A change too soon is now asked for once the minute is up."""
    from demo_states import busy, make_snapshot
    from workroom.core.protocol import TimelineReply
    from workroom.ui import timeline_view

    monkeypatch.setattr(timeline_view, "AUTO_REFRESH_SECONDS", 0.5)
    source = RecordSource(TimelineReply.model_validate({"now": 1_764_590_000.0, "spans": []}))
    view = timeline_view.TimelineView(source)  # type: ignore[arg-type]
    qtbot.addWidget(view)

    async def scenario() -> None:
        view.show_snapshot(make_snapshot("box1", "ssh", ConnectionState.LIVE, **busy()))
        await wait_for(lambda: source.asked == 1, 5, "the first reply")
        view.show_snapshot(make_snapshot("box1", "ssh", ConnectionState.LIVE, **busy(
            busy_reasons=["cpu: rustc (pid 9)"])))
        assert source.asked == 1  # not at once: the last reply is too fresh
        await wait_for(lambda: source.asked == 2, 5, "the change asked for once due")

    run(scenario())
