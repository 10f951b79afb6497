"""The why-awake section of the detail panel: a 24-hour strip, the day in words, the estimated cost, and
the host's "never work" process names.

It renders what `workroom.core.timeline` computed; every request goes through the controller as a task on
the one asyncio loop. It asks the agent only when the user selects a host, presses Refresh, or the host's
status changes while live (at most once a minute), never on a timer, and never unprompted while a box
that sleeps when idle is idle (`may_ask_unprompted`): the app's bytes must not keep a box awake.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QEvent, QPoint, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QMouseEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workroom.core import busy_reasons
from workroom.core import timeline as tl
from workroom.core.connection import CONNECT_WORDS, CONNECTION_SPECS, ConnectAction, ConnectionState
from workroom.core.durations import format_duration
from workroom.core.errors import UserError
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.last_known import LastKnown
from workroom.core.protocol import AgentCall, Method, TimelineReply
from workroom.ui import styles
from workroom.ui.plain_widgets import escape, plain_label, rich_label, set_tooltip, show_tooltip
from workroom.ui.tasks import TaskKeeper

AUTO_REFRESH_SECONDS = 60.0
MIN_SPAN_PX = 4.0
"""The narrowest a stretch of work (or sleep) is drawn: on a 320 px strip of 24 h, one pixel is 4.5 minutes."""
NOTABLE = frozenset({tl.SegmentKind.BUSY, tl.SegmentKind.HELD, tl.SegmentKind.CEILING, tl.SegmentKind.ASLEEP})

LEGEND: tuple[tuple[busy_reasons.ColourRole | tl.SegmentKind, str], ...] = (
    *busy_reasons.COLOUR_LEGEND.items(),
    *((kind, spec.legend) for kind, spec in tl.KINDS.items() if kind is not tl.SegmentKind.BUSY),
)
"""The legend's swatches: each colour a busy stretch can take (by what kept it busy), then each other kind of
stretch; words from the core tables."""


def _kind_colour(kind: busy_reasons.ColourRole | tl.SegmentKind, palette: QPalette) -> QColor:
    if isinstance(kind, busy_reasons.ColourRole):
        return styles.strip_series(palette, kind)
    if kind is tl.SegmentKind.HELD:
        return styles.strip_held(palette)
    if kind is tl.SegmentKind.CEILING:
        return styles.strip_ceiling(palette)
    if kind is tl.SegmentKind.IDLE:
        return styles.strip_idle(palette)
    if kind is tl.SegmentKind.ASLEEP:
        return styles.strip_asleep(palette)
    if kind is tl.SegmentKind.OFFLINE:
        return styles.strip_background(palette)
    return styles.strip_series(palette, busy_reasons.ColourRole.OTHER)


def colour_for(segment: tl.Segment, palette: QPalette | None = None) -> QColor:
    """The colour a stretch is painted in, from `palette` (the application's by default)."""
    pal = palette if palette is not None else QGuiApplication.palette()
    if segment.kind is tl.SegmentKind.BUSY:
        return styles.strip_series(pal, busy_reasons.colour_role(segment.reason_class))
    return _kind_colour(segment.kind, pal)


def legend_html(palette: QPalette) -> str:
    border = styles.strip_frame(palette).name()

    def swatch(kind: busy_reasons.ColourRole | tl.SegmentKind, words: str) -> str:
        return (f"<span style='background:{_kind_colour(kind, palette).name()};border:1px solid {border}'>"
                f"&nbsp;&nbsp;&nbsp;</span>&nbsp;{escape(words)}")

    busy = [swatch(kind, words) for kind, words in LEGEND if isinstance(kind, busy_reasons.ColourRole)]
    others = [swatch(kind, words) for kind, words in LEGEND if not isinstance(kind, busy_reasons.ColourRole)]
    return "busy: " + " ".join(busy) + " · " + " ".join(others)


class TimelineSource(Protocol):
    """What the view needs from the controller (AppController implements it)."""

    tasks: TaskKeeper

    def agent(self, name: str) -> AgentCall:
        """Ask the host's agent (its why-awake record, its "never work" names)."""
        ...

    def set_hourly_price(self, name: str, price: float | None) -> None: ...


class TimelineStrip(QWidget):
    """The window as one bar, oldest left; hovering a stretch says what it was and when."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("timeline_strip")
        self.summary: tl.TimelineSummary | None = None
        self.setMinimumHeight(26)
        self.setMouseTracking(True)

    def sizeHint(self) -> QSize:
        return QSize(320, 26)

    def set_summary(self, summary: tl.TimelineSummary | None) -> None:
        self.summary = summary
        set_tooltip(self, "" if summary is not None else "No record yet")
        self.update()

    def _x(self, t: float) -> float:
        assert self.summary is not None
        span = max(self.summary.end - self.summary.start, 1.0)
        return (t - self.summary.start) / span * (self.width() - 1)

    def _rect(self, seg: tl.Segment) -> tuple[float, float]:
        """Where a stretch is drawn: its share of the window, and at least MIN_SPAN_PX for one that matters
        (work, past ceiling, asleep), centred on it, so five minutes of a 24 h strip is still seen."""
        x0, x1 = self._x(seg.start), self._x(seg.end)
        if seg.kind in NOTABLE and x1 - x0 < MIN_SPAN_PX:
            middle = (x0 + x1) / 2
            x0 = min(max(0.0, middle - MIN_SPAN_PX / 2), self.width() - 1 - MIN_SPAN_PX)
            x1 = x0 + MIN_SPAN_PX
        return x0, max(x1, x0 + 1.0)

    def segment_at(self, x: float) -> tl.Segment | None:
        if self.summary is None:
            return None
        ordered = sorted(self.summary.segments, key=lambda s: s.kind not in NOTABLE)  # widened ones first
        for seg in ordered:
            x0, x1 = self._rect(seg)
            if x0 <= x <= x1:
                return seg
        return None

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setPen(Qt.PenStyle.NoPen)
        h = self.height() - 1
        palette = self.palette()
        painter.fillRect(QRectF(0, 0, self.width() - 1, h), styles.strip_background(palette))
        if self.summary is not None:
            # Idle and unrecorded time first; work, past ceiling and asleep on top (widened when short).
            for seg in sorted(self.summary.segments, key=lambda s: s.kind in NOTABLE):
                x0, x1 = self._rect(seg)
                painter.setBrush(QBrush(colour_for(seg, palette)))
                painter.drawRect(QRectF(x0, 0, x1 - x0, h))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(styles.strip_frame(palette)))
        painter.drawRect(QRectF(0, 0, self.width() - 1, h))
        painter.end()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        seg = self.segment_at(event.position().x())
        if seg is not None:
            show_tooltip(self.mapToGlobal(QPoint(int(event.position().x()), 0)), segment_tooltip(seg), self)


def may_ask_unprompted(snapshot: HostSnapshot) -> bool:
    """Whether the view may fetch the record without the user pressing Refresh: only over a LIVE session
    (a QUIET one keeps the wire silent on purpose), and never while a box that sleeps when idle is idle —
    a reply's bytes would restart its provider's idle clock and keep it up."""
    if not snapshot.connection.spec.live or snapshot.connection.spec.quiet:
        return False
    idle = snapshot.status is None or not snapshot.status.busy
    return not (snapshot.traits.metering.sleeps and idle)


def no_record_words(state: ConnectionState | None) -> str:
    """What to do to see the record, naming only a control that works in this state: Refresh while connected (it
    is disabled otherwise), else the state's own Connect control ("Wake and connect", "Retry now")."""
    spec = CONNECTION_SPECS[state] if state is not None else None
    if spec is None or spec.connect is ConnectAction.CONNECT:
        return "Connect to see what kept this host awake."
    if spec.live:
        return "Press Refresh to see what kept this host awake."
    if spec.connect is ConnectAction.NONE:
        return "Once it is connected, Refresh shows what kept this host awake."
    return f"{CONNECT_WORDS[spec.connect]} to see what kept this host awake."


def _loop_running() -> bool:
    """Whether requests can be made (not so in a test that feeds snapshots without the app's loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _clock(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%H:%M")


def segment_tooltip(seg: tl.Segment) -> str:
    return f"{_clock(seg.start)}–{_clock(seg.end)}: {seg.words} ({format_duration(seg.seconds)})"


class TimelineView(QWidget):
    def __init__(self, source: TimelineSource, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.setObjectName("timeline_view")
        self._source = source
        self._clock = clock
        self._wall = wall
        self.window_seconds = tl.DAY_SECONDS
        self.host_name: str | None = None
        self.hourly_price: float | None = None
        self.reply: TimelineReply | None = None
        self.summary: tl.TimelineSummary | None = None
        self.never_work: tuple[str, ...] = ()
        self._loaded_at: float | None = None
        self._seen_state: tuple[object, ...] | None = None
        self._known: LastKnown | None = None
        """What the app knows of the host (core.last_known): the platform's own stop, for the notes."""
        self._asleep_since: float | None = None
        """When the app saw the box go to sleep, while it is asleep (core.last_known): the strip shows it so."""
        self._reply_at: float | None = None
        """When the shown reply arrived (this computer's clock): the strip's "now" moves on from there."""
        self._reply_state: tuple[object, ...] | None = None
        """The host's (connection, verdict, first reason) when the reply arrived."""
        self._reply_held_until: float | None = None
        """Until when the host kept saying that (the span in progress is drawn on to here)."""
        self._reply_changed = False
        self._may_ask_later = False
        self._later = QTimer(self)
        self._later.setSingleShot(True)
        self._later.timeout.connect(self._ask_when_due)

        self.title = title = rich_label("<b>What kept it awake (last 24 h)</b>")
        title.setObjectName("timeline_title")
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setObjectName("timeline_refresh")
        self.refresh_button.clicked.connect(self.refresh)
        head = QHBoxLayout()
        head.addWidget(title, 1)
        head.addWidget(self.refresh_button)
        self.strip = TimelineStrip()
        self.axis = plain_label()
        self.axis.setObjectName("timeline_axis")
        self.headline = plain_label("Connect to see what kept this host awake.")
        self.headline.setObjectName("timeline_headline")
        self.headline.setWordWrap(True)
        self.others = plain_label()
        self.others.setObjectName("timeline_others")
        self.others.setWordWrap(True)
        self.cost = plain_label()
        self.cost.setObjectName("timeline_cost")
        self.cost.setWordWrap(True)
        self.problem = plain_label()
        self.problem.setObjectName("timeline_problem")
        self.problem.setWordWrap(True)
        styles.set_role(self.problem, styles.ERROR)
        legend = rich_label(legend_html(self.palette()))
        legend.setWordWrap(True)
        legend.setObjectName("timeline_legend")
        self.legend = legend

        self.price = QDoubleSpinBox()
        self.price.setObjectName("timeline_price")
        self.price.setRange(0.0, 100000.0)
        self.price.setDecimals(3)
        self.price.setSingleStep(0.05)
        self.price.setSpecialValueText("not set")
        self.price.setSuffix(" an hour")
        self.price.editingFinished.connect(self._price_edited)
        price_row = QHBoxLayout()
        price_row.addWidget(QLabel("Provider's price:"))
        price_row.addWidget(self.price)
        price_row.addStretch(1)

        self.never_list = QListWidget()
        self.never_list.setObjectName("never_work_list")
        self.never_list.setMaximumHeight(80)
        self.never_input = QLineEdit()
        self.never_input.setObjectName("never_work_input")
        self.never_input.setPlaceholderText("e.g. watch")  # fits the 360 px detail panel
        set_tooltip(self.never_input, "A process name or command that never counts as work, e.g. watch")
        self.never_input.returnPressed.connect(self._add_never)
        self.never_add = QPushButton("Never work")
        self.never_add.setObjectName("never_work_add")
        self.never_add.clicked.connect(self._add_never)
        self.never_remove = QPushButton("Remove")
        self.never_remove.setObjectName("never_work_remove")
        self.never_remove.clicked.connect(self._remove_never)
        never_row = QHBoxLayout()
        never_row.addWidget(self.never_input, 1)
        never_row.addWidget(self.never_add)
        never_row.addWidget(self.never_remove)
        self.never_status = plain_label()  # an agent's words about the list
        self.never_status.setObjectName("never_work_status")
        self.never_status.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        layout.addLayout(head)
        layout.addWidget(self.strip)
        layout.addWidget(self.axis)
        layout.addWidget(self.headline)
        layout.addWidget(self.others)
        layout.addWidget(legend)
        layout.addLayout(price_row)
        layout.addWidget(self.cost)
        layout.addWidget(self.problem)
        never_title = rich_label("<b>Never work on this host</b>: these processes and their children never keep "
                                 "it awake")
        never_title.setWordWrap(True)
        layout.addWidget(never_title)
        layout.addWidget(self.never_list)
        layout.addLayout(never_row)
        layout.addWidget(self.never_status)
        self._render()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:  # dark mode switched: the swatches follow
            self.legend.setText(legend_html(self.palette()))
        super().changeEvent(event)

    # -- following the selected host --------------------------------------------------------------

    def show_snapshot(self, snapshot: HostSnapshot | None) -> None:
        """Called with every snapshot of the selected host; asks the agent only when something changed."""
        if snapshot is None:
            self.host_name = None
            self._clear()
            self.setEnabled(False)
            return
        self.setEnabled(True)
        name = snapshot.host.name
        connected = snapshot.connection.spec.live
        if name != self.host_name:
            self.host_name = name
            self._clear()
            self._seen_state = None
        self.hourly_price = snapshot.host.hourly_price
        self._known = snapshot.last_known
        known_asleep = snapshot.last_known.asleep_since if snapshot.last_known is not None else None
        self._asleep_since = known_asleep if snapshot.connection.spec.asleep else None
        if not self.price.hasFocus():
            self.price.blockSignals(True)
            self.price.setValue(self.hourly_price or 0.0)
            self.price.blockSignals(False)
        self.refresh_button.setEnabled(connected)
        for widget in (self.never_input, self.never_add, self.never_remove):
            widget.setEnabled(connected)
        status = snapshot.status
        seen = (snapshot.connection.state, status.verdict if status else None,
                tuple(status.busy_reasons[:1]) if status else ())
        changed = seen != self._seen_state
        self._seen_state = seen
        now = self._clock()
        due = self._loaded_at is None or now - self._loaded_at >= AUTO_REFRESH_SECONDS
        asking = may_ask_unprompted(snapshot)
        self._may_ask_later = asking
        if changed and due and asking:
            self.refresh()
        else:
            if changed and asking and self._loaded_at is not None and not self._later.isActive():
                # Changed too soon after the last reply: asked once it is due, if it may still be asked then (a
                # record fetched as the box connected stayed empty through the whole job it then ran).
                self._later.start(int((AUTO_REFRESH_SECONDS - (now - self._loaded_at)) * 1000) + 50)
            self._render()

    def _ask_when_due(self) -> None:
        if self._may_ask_later and self.host_name is not None:
            self.refresh()

    def _clear(self) -> None:
        if hasattr(self, "_later"):
            self._later.stop()
        self.reply, self.summary, self.never_work, self._loaded_at = None, None, (), None
        self._reply_at = self._reply_state = None
        self.never_status.setText("")
        self._render()

    # -- asking the agent -------------------------------------------------------------------------

    def refresh(self) -> None:
        name = self.host_name
        if name is None or not _loop_running():
            return
        self._loaded_at = self._clock()

        async def load() -> None:
            try:
                reply = await self._source.agent(name)(Method.TIMELINE, since=self._wall() - self.window_seconds - 3600)
                never = await self._source.agent(name)(Method.EXCLUSIONS)
            except UserError as error:
                if name == self.host_name:
                    self.headline.setText(error.message)
                return
            if name != self.host_name:
                return
            self.reply, self.never_work = reply, never.names
            self._reply_at, self._reply_state = self._clock(), self._seen_state
            self._reply_held_until, self._reply_changed = self._reply_at, False
            self.never_status.setText(never.problem or "")
            self._render()

        self._source.tasks.run("timeline", load())

    def show_record(self, reply: TimelineReply | None, never_work: tuple[str, ...] = ()) -> None:
        """Show a record already in hand (the screenshots; a reply fetched elsewhere)."""
        self.reply, self.never_work = reply, never_work
        self._render()

    def _change_never(self, *, add: list[str] | None = None, remove: list[str] | None = None) -> None:
        """Ask the agent to add or remove a name in the list it holds (never to replace the list with this view's
        copy, which may be older than a change made meanwhile from the command line)."""
        name = self.host_name
        if name is None or not _loop_running():
            return

        async def change() -> None:
            try:
                result = await self._source.agent(name)(Method.EXCLUSIONS, add=add, remove=remove)
            except UserError as error:
                self.never_status.setText(f"{error.title}: {error.message}")
                return
            if name == self.host_name:
                self.never_work = result.names
                self.never_status.setText("Saved on the host; the agent applies it from its next tick.")
                self._render()

        self._source.tasks.run("never-work", change())

    def _add_never(self) -> None:
        text = self.never_input.text().strip()
        if not text:
            return
        self.never_input.clear()
        if text not in self.never_work:
            self._change_never(add=[text])

    def _remove_never(self) -> None:
        item = self.never_list.currentItem()
        if item is not None:
            self._change_never(remove=[item.text()])

    def _price_edited(self) -> None:
        if self.host_name is None:
            return
        value = self.price.value()
        price = None if value <= 0 else value
        if price != self.hourly_price:
            self.hourly_price = price
            self._source.set_hourly_price(self.host_name, price)
            self._render()

    # -- rendering --------------------------------------------------------------------------------

    def _show_never_work(self) -> None:
        """The never-work list, rebuilt only when it changed: the view re-renders every second, and a rebuild
        would drop the entry the user just selected to remove."""
        shown = [self.never_list.item(i).text() for i in range(self.never_list.count())]
        if shown == list(self.never_work):
            return
        current = self.never_list.currentItem()
        selected = current.text() if current is not None else None
        self.never_list.clear()
        self.never_list.addItems(list(self.never_work))
        if selected in self.never_work:
            self.never_list.setCurrentRow(list(self.never_work).index(selected))

    def _render(self) -> None:
        reply = self.reply
        if reply is not None and self._reply_at is not None:
            # Advanced locally, once a second with the window's tick: never by asking the agent again.
            now = self._clock()
            still = self._reply_state is not None and self._reply_state == self._seen_state \
                and isinstance(self._seen_state[0], ConnectionState) and CONNECTION_SPECS[self._seen_state[0]].live
            if still and not self._reply_changed:
                self._reply_held_until = now
            else:
                self._reply_changed = True  # once the host says something else, the stretch stops there
            held = (self._reply_held_until or self._reply_at) - self._reply_at
            reply = tl.advanced(reply, now - self._reply_at, extend_seconds=held)
        if reply is not None:
            reply = tl.with_asleep(reply, self._asleep_since)  # what the app saw since: asleep, not "no record"
        shown = tl.fitted_window(reply, self.window_seconds) if reply is not None else self.window_seconds
        self.title.setText(f"<b>What kept it awake (last {format_duration(shown)})</b>")
        self.summary = tl.summarise(reply, shown) if reply is not None else None
        self.strip.set_summary(self.summary)
        self._show_never_work()
        if self.summary is None:
            self.axis.setText("")
            self.others.setText("")
            self.cost.setText("")
            self.problem.setText("")
            if self.reply is None and self.host_name is not None:
                state = self._seen_state[0] if self._seen_state else None
                self.headline.setText(no_record_words(state if isinstance(state, ConnectionState) else None))
            return
        s = self.summary
        self.axis.setText(f"{format_duration(s.end - s.start)} ago ({_clock(s.start)}) … now ({_clock(s.end)}, "
                          "the host's clock)")
        words = s.headline(tl.period_words(s.end - s.start))
        self.headline.setText(words[:1].upper() + words[1:])
        self.others.setText(", ".join(s.other_lines()))
        cost = tl.cost_words(s, self.hourly_price)
        self.cost.setText(f"Estimated cost {cost}" if cost else
                          "Enter the provider's hourly price to see an estimated cost.")
        stopped = self._known.stop_note(s.start, s.end) if self._known is not None else None
        notes = [n for n in (s.problem, stopped[:1].upper() + stopped[1:] + "." if stopped else None) if n]
        if s.unknown_states:
            notes.append("The agent recorded states this app does not know (" + ", ".join(s.unknown_states)
                         + "); they show as no record.")
        self.problem.setText(" ".join(notes))
