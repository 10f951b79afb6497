"""The why-awake summary: segments in a window, totals, the sentence a user reads, the cost, `--since`."""

from __future__ import annotations

from typing import Any

import pytest
from workroom.core.protocol import TimelineReply
from workroom.core.timeline import (
    STRIP_LEGEND,
    SegmentKind,
    activity,
    cost_words,
    parse_since,
    period_words,
    summarise,
    text_strip,
)

pytestmark = pytest.mark.unit

NOW = 1_764_590_400.0
H = 3600.0


def reply(spans: list[tuple[float, float, str, str, str]], problem: str | None = None) -> TimelineReply:
    data: dict[str, Any] = {"now": NOW, "more_since": None, "keep_seconds": 604800, "problem": problem,
                            "spans": [{"start": s, "end": e, "state": st, "class": c, "subject": sub}
                                      for s, e, st, c, sub in spans]}
    return TimelineReply.model_validate(data)


def day() -> TimelineReply:
    """A developer's day in the agent's words, oldest first, ending now."""
    t = NOW - 24 * H
    spans = []
    for length, state, cls, subject in ((4 * H, "asleep", "", ""), (3 * H, "busy", "cpu", "cc1"),
                                        (10 * 60, "held", "cpu", "cc1"), (1 * H, "idle", "", ""),
                                        (3 * H, "busy", "cpu", "make"), (3 * H, "busy", "tcp", "ssh"),
                                        (10 * 60, "held", "tcp", "ssh"), (20 * 60, "busy", "cpu", "python3")):
        spans.append((t, t + length, state, cls, subject))
        t += length
    return reply(spans)


def test_the_sentence_a_user_reads() -> None:
    summary = summarise(day())
    assert summary.headline(period_words(24 * H)) == (
        "awake 9 h 40 min in the last 24 h: 3 h building, 3 h compiling, 3 h ssh session, 20 min running python3, "
        "20 min held after work")
    assert summary.totals[SegmentKind.ASLEEP] == 4 * H
    assert summary.other_lines() == ["1 h idle", "4 h asleep", "9 h 20 min no record"]


def test_unrecorded_time_is_offline_and_the_window_clips() -> None:
    summary = summarise(reply([(NOW - 30 * H, NOW - 20 * H, "busy", "cpu", "cc1"),
                               (NOW - 2 * H, NOW - 1 * H, "idle", "", "")]))
    kinds = [(s.kind, round(s.seconds / H, 2)) for s in summary.segments]
    assert kinds == [(SegmentKind.BUSY, 4.0), (SegmentKind.OFFLINE, 18.0), (SegmentKind.IDLE, 1.0),
                     (SegmentKind.OFFLINE, 1.0)]
    assert summary.segments[0].start == NOW - 24 * H and summary.segments[-1].end == NOW
    assert sum(s.seconds for s in summary.segments) == pytest.approx(24 * H)


def test_adjacent_spans_of_one_activity_make_one_segment() -> None:
    summary = summarise(reply([(NOW - 3 * H, NOW - 2 * H, "busy", "cpu", "cc1"),
                               (NOW - 2 * H, NOW - 1 * H, "busy", "cpu", "ld"),
                               (NOW - 1 * H, NOW, "busy", "cpu", "python3")]))
    assert [s.words for s in summary.segments] == ["no record (agent not running or unreachable)", "compiling",
                                                    "running python3"]
    assert summary.segments[1].seconds == 2 * H


def test_ceiling_and_unknown_states() -> None:
    summary = summarise(reply([(NOW - 2 * H, NOW - 1 * H, "ceiling", "cpu", "cc1"),
                               (NOW - 1 * H, NOW, "dreaming", "", "")]), window_seconds=2 * H)
    assert summary.headline("today") == "awake 1 h today: 1 h past the awake ceiling"
    assert summary.unknown_states == ("dreaming",)
    assert summary.segments[-1].kind is SegmentKind.OFFLINE


def test_nothing_recorded_and_not_kept_awake() -> None:
    assert summarise(reply([])).headline("today") == "nothing recorded today"
    quiet = summarise(reply([(NOW - H, NOW, "idle", "", "")]))
    assert quiet.headline("today") == "not kept awake today"


def test_a_corrupt_record_is_carried_to_the_summary() -> None:
    assert summarise(reply([], problem="set aside")).problem == "set aside"


@pytest.mark.parametrize(("cls", "subject", "words"), [
    ("cpu", "cc1plus", "compiling"), ("cpu", "rustc", "compiling"), ("cpu", "make", "building"),
    ("sleep", "make", "waiting in a job (make)"), ("cpu", "pytest", "testing"), ("tcp", "ssh", "ssh session"),
    ("tcp", "curl", "downloading"), ("keystroke", "", "someone typing"), ("tty_output", "", "terminal output"),
    ("net", "", "network traffic"), ("sleep", "sh", "waiting in a job (sh)"),
    ("tcp", "psql", "waiting on the network (psql)"), ("fifo", "cat", "waiting in a pipeline (cat)"),
    ("disk", "dd", "waiting on disk (dd)"), ("cpu", "", "CPU work"), ("operation", "", "the agent's own task"),
    ("weird", "x", "other work"),
])
def test_activities_in_a_developers_words(cls: str, subject: str, words: str) -> None:
    """The same words as a host's row says for a live reason (core.busy_reasons), as a stretch of the day."""
    assert activity(cls, subject) == words


def test_a_network_wait_is_told_with_its_peer_and_an_older_agents_span_without() -> None:
    """Spans of one process waiting on two peers are two activities; a span from an agent that keeps no peer
    reads as before."""
    spans = [{"start": NOW - 3 * H, "end": NOW - 2 * H, "state": "busy", "class": "tcp", "subject": "psql",
              "peer": "10.0.3.7", "port": 5432},
             {"start": NOW - 2 * H, "end": NOW - 1.5 * H, "state": "busy", "class": "tcp", "subject": "psql",
              "peer": "10.0.3.8", "port": 5432},
             {"start": NOW - 1.5 * H, "end": NOW - H, "state": "busy", "class": "tcp", "subject": "node",
              "peer": "127.0.0.1", "local_port": 8080},
             {"start": NOW - H, "end": NOW, "state": "busy", "class": "tcp", "subject": "psql"}]
    summary = summarise(TimelineReply.model_validate({"now": NOW, "spans": spans}))
    assert summary.activities == (("waiting on the network (psql → 10.0.3.7:5432)", H),
                                  ("waiting on the network (psql)", H),
                                  ("serving port 8080 (node ← 127.0.0.1)", H / 2),
                                  ("waiting on the network (psql → 10.0.3.8:5432)", H / 2))
    assert [g.peer for g in summary.segments if g.kind is SegmentKind.BUSY] == [
        "10.0.3.7", "10.0.3.8", "127.0.0.1", None]
    assert summary.headline("in the last 24 h").startswith(
        "awake 3 h in the last 24 h: 1 h waiting on the network (psql → 10.0.3.7:5432), ")
    with pytest.raises(ValueError, match="port"):
        TimelineReply.model_validate({"now": NOW, "spans": [dict(spans[0], port=70000)]})
    hostile = TimelineReply.model_validate({"now": NOW, "spans": [dict(spans[0], peer="10.0.3.7\x1b[2J")]})
    assert "\x1b" not in (hostile.spans[0].peer or "")


def test_cost_at_the_users_hourly_price() -> None:
    summary = summarise(day())
    assert cost_words(summary, None) is None
    # up = 9 h 40 min awake + 1 h idle = 10 h 40 min
    assert cost_words(summary, 0.5) == "≈ 5.33 for 10 h 40 min up (4.83 of it awake for work), at 0.5 an hour"
    assert cost_words(summary, float("nan")) is None and cost_words(summary, -1) is None


def test_durations_read_as_everywhere_else() -> None:
    """One duration style for every face: seconds under a minute, days from two days on."""
    short = summarise(reply([(NOW - 45, NOW, "busy", "cpu", "cc1")]), window_seconds=7 * 24 * H)
    assert short.headline(period_words(7 * 24 * H)) == "awake 45 s in the last 7 d: 45 s compiling"
    assert period_words(24 * H) == "in the last 24 h"


def test_the_text_strip_legend_names_every_kind() -> None:
    assert STRIP_LEGEND == "# busy, + kept awake after work, ! past ceiling, - idle, z asleep, blank no record"
    assert len(set(text_strip(summarise(day())))) >= 4


@pytest.mark.parametrize(("text", "seconds"), [("24h", 86400), ("90m", 5400), ("2d", 172800), ("3600", 3600),
                                               ("1.5 h", 5400), ("45min", 2700)])
def test_since_parses(text: str, seconds: float) -> None:
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["yesterday", "0h", "-1h", "8d", "inf", "nanh", ""])
def test_since_refuses_in_words(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text)):
        parse_since(text)


def test_the_strip_fits_a_short_record() -> None:
    """A box used a few minutes: its strip is the last 15 min (its work a third of it), not 24 h where the
    minutes were under a pixel; a record older than a day keeps the day."""
    from workroom.core.timeline import STRIP_WINDOWS, fitted_window

    now = 1_764_590_000.0

    def reply(first: float) -> TimelineReply:
        return TimelineReply.model_validate({"now": now, "spans": [
            {"start": now - first, "end": now - 60, "state": "busy", "class": "cpu", "subject": "cc1"}]})

    assert fitted_window(reply(5 * 60)) == 15 * 60
    assert fitted_window(reply(40 * 60)) == 3600
    assert fitted_window(reply(5 * H)) == 6 * H
    assert fitted_window(reply(3 * 24 * H)) == 24 * H
    assert fitted_window(TimelineReply.model_validate({"now": now, "spans": []})) == 15 * 60
    assert STRIP_WINDOWS[-1] == 24 * H
    summary = summarise(reply(5 * 60), fitted_window(reply(5 * 60)))
    assert summary.totals[SegmentKind.BUSY] / (summary.end - summary.start) > 0.25


def test_an_asleep_boxs_time_since_it_went_is_asleep_not_no_record() -> None:
    """The record ends 21 min ago (the agent records nothing asleep); the app saw the box go to sleep 20 min ago:
    those 20 min read asleep, the minute before it no record, and what the agent recorded stays as it was."""
    from workroom.core.timeline import with_asleep

    record = reply([(NOW - 40 * 60, NOW - 21 * 60, "busy", "cpu", "cc1")])
    shown = summarise(with_asleep(record, NOW - 20 * 60), 3600)
    assert shown.totals[SegmentKind.ASLEEP] == pytest.approx(20 * 60)
    assert shown.totals[SegmentKind.OFFLINE] == pytest.approx(20 * 60 + 60)  # before the record, and the minute after
    assert shown.totals[SegmentKind.BUSY] == pytest.approx(19 * 60)
    assert "20 min asleep" in shown.other_lines()
    assert with_asleep(record, None) is record  # not asleep: nothing added
    overlapping = summarise(with_asleep(record, NOW - 30 * 60), 3600)  # never over what the agent recorded
    assert overlapping.totals[SegmentKind.BUSY] == pytest.approx(19 * 60)
    assert overlapping.totals[SegmentKind.ASLEEP] == pytest.approx(21 * 60)
