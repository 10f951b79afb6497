"""Busy reasons in developer words: every reason the agent's classifier writes has plain words."""

from __future__ import annotations

import pytest
from workroom.core.busy_words import plain_reason, plain_reasons

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("raw", "words"), [
    ("cpu: cc1plus (pid 4121)", "compiling: cc1plus"),
    ("cpu: rustc (pid 7) (coarse)", "compiling: rustc"),
    ("cpu: make (pid 9)", "building: make"),
    ("cpu: pytest (pid 9)", "testing: pytest"),
    ("cpu: python3 (pid 12)", "running: python3"),
    ("disk: dd (pid 3) in D state", "waiting on disk: dd"),
    ("disk: tar (pid 3) in D state (coarse)", "waiting on disk: tar"),
    ("sleep: sleep (pid 44)", "waiting in a job: sleep"),
    ("tcp: curl (pid 5)", "network connection: curl"),
    ("tcp: psql (pid 42) to 10.0.3.7:5432", "waiting on the network: psql → 10.0.3.7:5432"),
    ("tcp: python3 (pid 8) to [::1]:8100", "waiting on the network: python3 → [::1]:8100"),
    ("tcp: node (pid 7) from 127.0.0.1:51234 on port 8080", "serving port 8080: node ← 127.0.0.1:51234"),
    ("tcp: ssh (pid 5)", "ssh connection out"),
    ("ssh session: alice from 10.0.0.5", "ssh session from 10.0.0.5"),
    ("tty: output", "terminal output"),
    ("tty: keystroke", "someone typing"),
    ("net: traffic", "network traffic"),
    ("agent: operation in flight", "the agent's own task"),
    ("hold: after cpu: cc1plus (pid 4121)", "compiling: cc1plus (just now)"),
    ("+2 more", "+2 more"),
    ("something new: x", "something new: x"),
])
def test_plain_words(raw: str, words: str) -> None:
    assert plain_reason(raw) == words


def test_no_classifier_jargon_for_any_reason_the_agent_writes() -> None:
    raws = ["cpu: a (pid 1)", "disk: b (pid 2) in D state", "sleep: c (pid 3)", "tcp: d (pid 4)", "tty: output",
            "tty: keystroke", "net: traffic", "agent: operation in flight", "hold: after net: traffic"]
    for words in plain_reasons(raws):
        for jargon in ("D state", "hold:", "net:", "pid", "tty:", "cpu:"):
            assert jargon not in words, (words, jargon)


def test_same_words_once_in_order() -> None:
    assert plain_reasons(["cpu: cc1plus (pid 1)", "cpu: cc1plus (pid 2)", "tty: output"]) == [
        "compiling: cc1plus", "terminal output"]
