"""Ceiling prompt cards: one per live host whose agent asks "keep it awake?", in a scroll area (a host that is
not live cannot take the answer; its card goes, and comes back with the link while the prompt is pending).

A card is keyed by (host, prompt deadline): once answered (Keep awake or Dismiss) the same prompt
never comes back, while a new prompt from that host does. A Keep awake that cannot reach the host
leaves the card up with the reason. The countdown uses one 1 Hz QTimer that runs only while a card
is showing: it re-renders, it never asks the network.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QMouseEvent, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QScrollArea, QVBoxLayout, QWidget

from workroom.core import box_times
from workroom.core.durations import format_duration
from workroom.core.errors import UserError
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.prompt_answers import AnswerFace
from workroom.ui import row_text, styles
from workroom.ui.plain_widgets import plain_label
from workroom.ui.tasks import TaskKeeper

CardKey = tuple[str, float]
Keeper = Callable[[str, AnswerFace], Awaitable[Any]]
"""Sends an answer for host `name`, saying which face it came from (core.prompt_answers)."""
MAX_VISIBLE_CARDS = 3
"""Cards shown before the area scrolls."""


class PromptCard(QFrame):
    clicked = Signal(str)

    def __init__(self, snapshot: HostSnapshot, key: CardKey) -> None:
        super().__init__()
        self.setObjectName("prompt_card")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        styles.set_role(self, styles.CARD)
        self.host_name = snapshot.host.name
        self.key = key
        self.snapshot = snapshot
        self.title = plain_label()  # workroom names and busy reasons: host-supplied text
        self.title.setObjectName("card_title")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.body = plain_label()
        self.body.setObjectName("card_body")
        self.body.setWordWrap(True)
        self.countdown = plain_label()
        self.countdown.setObjectName("card_countdown")
        self.error = plain_label()  # an agent's or a connection's words
        self.error.setObjectName("card_error")
        self.error.setWordWrap(True)
        styles.set_role(self.error, styles.ERROR)
        self.error.hide()
        self.keep_button = QPushButton("Keep awake")
        self.keep_button.setObjectName("card_keep")
        self.keep_button.setDefault(True)
        self.dismiss_button = QPushButton("Let it sleep")
        self.dismiss_button.setObjectName("card_dismiss")
        buttons = QHBoxLayout()
        buttons.addWidget(self.countdown, 1)
        buttons.addWidget(self.dismiss_button)
        buttons.addWidget(self.keep_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.body)
        layout.addWidget(self.error)
        layout.addLayout(buttons)

    def render_snapshot(self, snapshot: HostSnapshot, now: float) -> None:
        self.snapshot = snapshot
        # The app's own name for the host, never the one its agent gives: a host must not be able to title
        # its prompt as another host's ("prod-db: keep it awake?") and have the user answer the wrong card.
        workroom = snapshot.host.name
        self.title.setText(f"{workroom}: keep it awake?")
        status = snapshot.status
        agent_now = row_text.agent_now(snapshot, now)
        if status is not None and agent_now is not None:
            how_long = box_times.past_ceiling_words(status, agent_now)
        else:
            awake = snapshot.prompt.awake_seconds if snapshot.prompt else 0.0
            how_long = f"busy for {format_duration(awake)}, longer than its awake ceiling"
        # A sentence of its own, not in brackets: the reasons carry brackets of their own ("sh (just now)").
        reasons = f" Busy: {row_text.busy_text(snapshot)}." if status and status.busy_reasons else ""
        self.body.setText(f"{workroom} has been {how_long}.{reasons} "
                          "If nobody answers, its agent stops keeping it awake.")
        self.render_countdown(now)

    def render_countdown(self, now: float) -> None:
        left = row_text.prompt_seconds_left(self.snapshot, now)
        if left is None:
            self.countdown.setText("")
        elif left <= 0:
            self.countdown.setText("Time is up: no longer kept awake")
        else:
            self.countdown.setText(f"Answer within {format_duration(left)}")

    def show_error(self, error: UserError) -> None:
        self.error.setText(f"{error.title}: {error.message} {error.hint}".strip())
        self.error.show()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.clicked.emit(self.host_name)
        super().mousePressEvent(event)


class PromptCardsView(QScrollArea):
    card_raised = Signal(str, str)
    """(host name, workroom) when a new card appears: the app turns it into a system notification."""
    card_clicked = Signal(str)
    prompt_answered = Signal(str)
    """A host's prompt was answered here (Keep awake succeeded, or Let it sleep / Dismiss)."""
    ticked = Signal()
    """Every second while cards are showing (views refresh their own countdowns with it)."""

    def __init__(self, keeper: Keeper, tasks: TaskKeeper, clock: Callable[[], float] = time.monotonic, *,
                 sleeper: Keeper | None = None) -> None:
        super().__init__()
        self.setObjectName("prompt_cards")
        self._keeper = keeper
        self._sleeper = sleeper
        """Sends "let it sleep" to the host's agent (it stops keeping the box awake now)."""
        self._tasks = tasks
        self._clock = clock
        self.cards: dict[str, PromptCard] = {}
        self.answered: set[CardKey] = set()
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        inner = QWidget()
        self._layout = QVBoxLayout(inner)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.addStretch(1)
        self.setWidget(inner)
        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self._tick)
        self.hide()

    # -- feeding ----------------------------------------------------------------------------------

    def sync(self, snapshot: HostSnapshot) -> None:
        """Show, update or drop the card of one host from its latest snapshot."""
        name = snapshot.host.name
        deadline = row_text.prompt_deadline(snapshot)
        card = self.cards.get(name)
        if deadline is None or (name, deadline) in self.answered:
            if card is not None:
                self._drop(name)
            return
        key = (name, deadline)
        if card is not None and card.key != key:
            self._drop(name)
            card = None
        if card is None:
            card = self._add(snapshot, key)
            self.card_raised.emit(name, name)
        card.render_snapshot(snapshot, self._clock())

    def forget_host(self, name: str) -> None:
        if name in self.cards:
            self._drop(name)

    # -- internals --------------------------------------------------------------------------------

    def _add(self, snapshot: HostSnapshot, key: CardKey) -> PromptCard:
        card = PromptCard(snapshot, key)
        card.keep_button.clicked.connect(lambda: self._keep(card))
        card.dismiss_button.clicked.connect(lambda: self._let_sleep(card))
        card.clicked.connect(self.card_clicked)
        self._layout.insertWidget(self._layout.count() - 1, card)
        self.cards[key[0]] = card
        self._resize()
        return card

    def _drop(self, name: str) -> None:
        card = self.cards.pop(name)
        self._layout.removeWidget(card)
        card.hide()
        card.deleteLater()
        self._resize()

    def _resize(self) -> None:
        if not self.cards:
            self.timer.stop()
            self.hide()
            return
        shown = list(self.cards.values())[:MAX_VISIBLE_CARDS]
        width = max(self.viewport().width(), 300)
        height = sum(max(c.heightForWidth(width), c.minimumSizeHint().height()) for c in shown)
        self.setFixedHeight(height + self._layout.spacing() * len(shown) + 2)
        self.show()
        if not self.timer.isActive():
            self.timer.start()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.cards and event.size().width() != event.oldSize().width():
            self._resize()

    def _answer(self, card: PromptCard) -> None:
        self.answered.add(card.key)
        if self.cards.get(card.host_name) is card:
            self._drop(card.host_name)
        self.prompt_answered.emit(card.host_name)

    def keep_host(self, name: str, face: AnswerFace = AnswerFace.WINDOW) -> bool:
        """Answer `name`'s card with Keep awake (as its button does; from `face`); False when it has no card."""
        card = self.cards.get(name)
        if card is None:
            return False
        self._keep(card, face)
        return True

    def dismiss(self, name: str, face: AnswerFace = AnswerFace.WINDOW) -> bool:
        """Answer `name`'s card with "let it sleep" (as its button does: its agent stops keeping it awake now;
        from `face`); False when it has no card."""
        card = self.cards.get(name)
        if card is None:
            return False
        self._let_sleep(card, face)
        return True

    def _let_sleep(self, card: PromptCard, face: AnswerFace = AnswerFace.WINDOW) -> None:
        if self._sleeper is None:
            self._answer(card)
            return
        self._send(card, card.dismiss_button, "Letting it sleep…", "let-sleep", self._sleeper, face)

    def _keep(self, card: PromptCard, face: AnswerFace = AnswerFace.WINDOW) -> None:
        self._send(card, card.keep_button, "Keeping…", "keep", self._keeper, face)

    def _send(self, card: PromptCard, button: QPushButton, busy_text: str, task: str,
              answer: Keeper, face: AnswerFace) -> None:
        """Send one answer over the link: the button says `busy_text` meanwhile; a failure is shown on the
        card (if it is still the host's) with the button as it was, a success answers the card."""
        label = button.text()

        async def send() -> None:
            button.setEnabled(False)
            button.setText(busy_text)
            try:
                await answer(card.host_name, face)
            except UserError as error:
                if self.cards.get(card.host_name) is card:
                    card.show_error(error)
                    button.setEnabled(True)
                    button.setText(label)
                    self._resize()
                return
            self._answer(card)

        self._tasks.run(f"{task}:{card.host_name}", send())

    def _tick(self) -> None:
        now = self._clock()
        for card in self.cards.values():
            card.render_snapshot(card.snapshot, now)  # its "busy for" moves on with the row's, not only the countdown
        self.ticked.emit()
