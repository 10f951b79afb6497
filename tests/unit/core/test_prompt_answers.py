"""What a press on an answered prompt's notification says (core.prompt_answers)."""

from __future__ import annotations

import pytest
from status_factory import busy_dict, status_dict
from workroom.core.prompt_answers import Answer, AnswerFace, SentAnswer, already_answered
from workroom.core.protocol import Status

pytestmark = pytest.mark.unit


def test_an_answer_sent_here_is_named_with_its_face_and_age() -> None:
    sent = SentAnswer(Answer.KEEP, AnswerFace.COMMAND_LINE, at=1000.0)
    idle = Status.model_validate(status_dict())
    words = already_answered("box1", sent, idle, asked_at=990.0, now=1032.0, live=True, asleep=False)
    assert words == ("box1's question was already answered: Keep awake, from the command line, 32 s ago. "
                     "It is idle now, so there is nothing to keep awake.")


def test_an_answer_from_before_the_question_is_not_its_answer() -> None:
    old = SentAnswer(Answer.LET_SLEEP, AnswerFace.MENU, at=900.0)
    ran_out = Status.model_validate(busy_dict(suppressed=True, awake_ceiling_exceeded=True))
    words = already_answered("box1", old, ran_out, asked_at=990.0, now=1100.0, live=True, asleep=False)
    assert "nobody answered in time" in words and "Keep awake (in its menu) keeps it up" in words
    let_go = Status.model_validate(busy_dict(suppressed=True, let_sleep=True))
    assert "Let it sleep, from another computer" in already_answered(
        "box1", None, let_go, asked_at=990.0, now=1100.0, live=False, asleep=True)
    assert already_answered("box1", None, None, None, 0.0, live=False, asleep=True).endswith(
        "It is asleep now: Wake and connect (in its menu) wakes it.")
