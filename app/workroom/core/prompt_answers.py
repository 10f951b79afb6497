"""Who answered a ceiling prompt, how and when: so a click on a notification left from an answered prompt can say
so in words instead of doing nothing (docs/ui.md, "Notifications").

The session records each answer it sends (`SentAnswer`), with the face it came from; an answer it did not send
(another computer, the prompt running out) is read from the agent's status.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from workroom.core.durations import format_duration
from workroom.core.protocol import Status, Verdict


class AnswerFace(StrEnum):
    """Where an answer came from, as a sentence names it ("from the menu")."""

    WINDOW = "the window"
    MENU = "the menu"
    NOTIFICATION = "its notification"
    COMMAND_LINE = "the command line"


class Answer(StrEnum):
    KEEP = "Keep awake"
    LET_SLEEP = "Let it sleep"


@dataclass(frozen=True)
class SentAnswer:
    """An answer this app's engine sent to the host's agent."""

    answer: Answer
    face: AnswerFace
    at: float
    """Unix time it was taken by the agent."""

    def words(self, now: float) -> str:
        """"Keep awake, from the command line, 32 s ago"."""
        return f"{self.answer.value}, from {self.face.value}, {format_duration(max(0.0, now - self.at))} ago"


def how_answered(sent: SentAnswer | None, status: Status | None, asked_at: float | None, now: float) -> str:
    """How the prompt asked at `asked_at` (Unix time) was settled, as the end of "…was already answered: …": an
    answer sent here since then, else what the agent's status shows (another computer's answer, or nobody
    answering in time)."""
    if sent is not None and (asked_at is None or sent.at >= asked_at):
        return sent.words(now)
    if status is not None and status.suppressed and not status.let_sleep:
        return "nobody answered in time, so its agent stopped keeping it awake"
    if status is not None and status.let_sleep:
        return "Let it sleep, from another computer"
    return "from another computer"


def what_now(status: Status | None, *, live: bool, asleep: bool) -> str:
    """Where the box is now, and what would act on it, for the same message."""
    if asleep:
        return "It is asleep now: Wake and connect (in its menu) wakes it."
    if not live or status is None:
        return "It is not connected now, so nothing can be sent to it."
    if status.classifier_verdict is not Verdict.BUSY:
        return "It is idle now, so there is nothing to keep awake."
    if status.suppressed:
        return "It is busy and no longer kept awake: Keep awake (in its menu) keeps it up."
    return "It is busy and kept awake: Let it sleep is no longer needed unless you want it stopped now."


def already_answered(name: str, sent: SentAnswer | None, status: Status | None, asked_at: float | None,
                     now: float, *, live: bool, asleep: bool) -> str:
    """What a click on a notification left from an answered prompt says when the click cannot act."""
    return (f"{name}'s question was already answered: {how_answered(sent, status, asked_at, now)}. "
            + what_now(status, live=live, asleep=asleep))
