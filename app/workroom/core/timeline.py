"""What kept a box awake, in words: the agent's why-awake record cut to a window, summed and phrased.

Pure (no Qt, no I/O): the strip widget and `workroom why` both draw from `summarise`, so the app and the
CLI say the same thing. Times are the agent's wall clock (Unix seconds), so a box whose clock differs from
this computer's is still read consistently. See docs/agent.md ("Why-awake timeline").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from workroom.core.busy_reasons import strip_words
from workroom.core.durations import format_duration
from workroom.core.protocol import TimelineReply, TimelineSpan

__all__ = [
    "DAY_SECONDS",
    "KINDS",
    "STRIP_LEGEND",
    "KindSpec",
    "Segment",
    "SegmentKind",
    "TimelineSummary",
    "activity",
    "advanced",
    "cost_words",
    "parse_since",
    "period_words",
    "summarise",
    "text_strip",
]

DAY_SECONDS = 24 * 3600.0


class SegmentKind(StrEnum):
    """What a stretch of the strip shows (the agent's states, plus time it did not record)."""

    BUSY = "busy"
    HELD = "held"
    CEILING = "ceiling"
    IDLE = "idle"
    ASLEEP = "asleep"
    OFFLINE = "offline"


AWAKE_KINDS = frozenset({SegmentKind.BUSY, SegmentKind.HELD, SegmentKind.CEILING})
"""Published (or, past the ceiling, would-be) BUSY: the box was being kept up for work."""

def activity(reason_class: str, subject: str, *, peer: str | None = None, port: int | None = None,
             local_port: int | None = None) -> str:
    """A reason class and process in a developer's words: ("cpu", "cc1") -> "compiling"; a network wait with its
    peer: "waiting on the network (psql → 10.0.3.7:5432)" (`core.busy_reasons`)."""
    return strip_words(reason_class, subject, peer=peer, port=port, local_port=local_port)


@dataclass(frozen=True)
class Segment:
    """One stretch of the strip: [start, end) in the agent's Unix seconds."""

    start: float
    end: float
    kind: SegmentKind
    reason_class: str = ""
    subject: str = ""
    peer: str | None = None
    port: int | None = None
    local_port: int | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def words(self) -> str:
        """What this stretch was, for a tooltip: "compiling", "held after work", "asleep"."""
        if self.kind is SegmentKind.BUSY:
            return activity(self.reason_class, self.subject, peer=self.peer, port=self.port,
                            local_port=self.local_port)
        return _KIND_WORDS[self.kind]


@dataclass(frozen=True)
class KindSpec:
    """How a kind of stretch reads: in a tooltip and a sentence, in the legend, and as the text strip's character."""

    words: str
    legend: str
    char: str


KINDS: dict[SegmentKind, KindSpec] = {
    SegmentKind.BUSY: KindSpec("busy", "busy", "#"),
    SegmentKind.HELD: KindSpec("held after work", "kept awake after work", "+"),
    SegmentKind.CEILING: KindSpec("busy past the awake ceiling", "past ceiling", "!"),
    SegmentKind.IDLE: KindSpec("idle", "idle", "-"),
    SegmentKind.ASLEEP: KindSpec("asleep", "asleep", "z"),
    SegmentKind.OFFLINE: KindSpec("no record (agent not running or unreachable)", "no record", " "),
}
"""Every kind of stretch, in the legend's order. A busy stretch's words are its activity (`core.busy_reasons`)."""
_KIND_WORDS = {kind: spec.words for kind, spec in KINDS.items()}


@dataclass(frozen=True)
class TimelineSummary:
    """A window of the record: the strip's segments, totals per kind and per activity, and words."""

    start: float
    end: float
    segments: tuple[Segment, ...]
    totals: dict[SegmentKind, float]
    activities: tuple[tuple[str, float], ...]
    """Busy time by activity, largest first."""
    problem: str | None = None
    unknown_states: tuple[str, ...] = field(default=())

    @property
    def awake_seconds(self) -> float:
        return sum(self.totals.get(k, 0.0) for k in AWAKE_KINDS)

    @property
    def up_seconds(self) -> float:
        """Time the box was running (awake or idle, not asleep, not unrecorded): what a provider bills."""
        return self.awake_seconds + self.totals.get(SegmentKind.IDLE, 0.0)

    def headline(self, period: str) -> str:
        """ "awake 9 h 20 min in the last 24 h: 6 h compiling, 3 h an ssh session, 20 min held after work" """
        awake = self.awake_seconds
        if awake < 1:
            recorded = self.up_seconds or self.totals.get(SegmentKind.ASLEEP)
            return f"not kept awake {period}" if recorded else f"nothing recorded {period}"
        parts = [f"{format_duration(s)} {what}" for what, s in self.activities if s >= 1]
        for kind, words in ((SegmentKind.HELD, "held after work"), (SegmentKind.CEILING, "past the awake ceiling")):
            if self.totals.get(kind, 0.0) >= 1:
                parts.append(f"{format_duration(self.totals[kind])} {words}")
        return f"awake {format_duration(awake)} {period}: " + ", ".join(parts)

    def other_lines(self) -> list[str]:
        """Asleep, idle and unrecorded time, one phrase each (only those that happened)."""
        out = []
        for kind, words in ((SegmentKind.IDLE, "idle"), (SegmentKind.ASLEEP, "asleep"),
                            (SegmentKind.OFFLINE, "no record")):
            s = self.totals.get(kind, 0.0)
            if s >= 60:
                out.append(f"{format_duration(s)} {words}")
        return out


STRIP_WINDOWS = (15 * 60.0, 30 * 60.0, 3600.0, 3 * 3600.0, 6 * 3600.0, 12 * 3600.0, DAY_SECONDS)
"""The windows the detail panel's strip may show, shortest first."""


def fitted_window(reply: TimelineReply, longest: float = DAY_SECONDS) -> float:
    """The strip's window: the shortest of `STRIP_WINDOWS` that holds the whole record, up to `longest`. A box
    first used a few minutes ago has a strip of its last 15 min, not a day that is almost all "no record" (its
    few minutes were under a pixel wide)."""
    if not reply.spans:
        return STRIP_WINDOWS[0]  # an agent records from its start on: none yet means it has only just started
    needed = reply.now - min(span.start for span in reply.spans)
    return next((w for w in STRIP_WINDOWS if needed <= w <= longest), longest)


def summarise(reply: TimelineReply, window_seconds: float = DAY_SECONDS) -> TimelineSummary:
    """The last `window_seconds` before the agent's `now`: segments (gaps filled as offline) and totals."""
    end = reply.now
    start = end - window_seconds
    segments: list[Segment] = []
    unknown: list[str] = []
    at = start
    for span in sorted(reply.spans, key=lambda s: s.start):
        s, e = max(span.start, start, at), min(span.end, end)
        if e <= s:
            continue
        if s - at >= 1.0:
            segments.append(Segment(at, s, SegmentKind.OFFLINE))
        kind = _kind(span, unknown)
        segments.append(Segment(s, e, kind, span.reason_class, span.subject, span.peer, span.port, span.local_port))
        at = e
    if end - at >= 1.0:
        segments.append(Segment(at, end, SegmentKind.OFFLINE))
    totals: dict[SegmentKind, float] = {}
    by_activity: dict[str, float] = {}
    for seg in segments:
        totals[seg.kind] = totals.get(seg.kind, 0.0) + seg.seconds
        if seg.kind is SegmentKind.BUSY:
            by_activity[seg.words] = by_activity.get(seg.words, 0.0) + seg.seconds
    activities = tuple(sorted(by_activity.items(), key=lambda kv: (-kv[1], kv[0])))
    return TimelineSummary(start, end, tuple(_merge(segments)), totals, activities, reply.problem,
                           tuple(sorted(set(unknown))))


CURRENT_SPAN_SLACK_SECONDS = 90.0
"""A span ending this close to the reply's `now` is the minute in progress (the agent sends it as it stands)."""


def advanced(reply: TimelineReply, seconds: float, *, extend_seconds: float) -> TimelineReply:
    """The record as of `seconds` after it was fetched, without fetching it again (its bytes would restart an
    idle box's clock): `now` moves on, and the span in progress runs on for `extend_seconds` (as long as the
    host went on saying what it said then); time after that shows as no record until the next fetch."""
    if seconds <= 0:
        return reply
    now = reply.now + seconds
    spans = reply.spans
    extend = min(max(0.0, extend_seconds), seconds)
    if extend > 0 and spans and reply.now - spans[-1].end <= CURRENT_SPAN_SLACK_SECONDS:
        spans = (*spans[:-1], spans[-1].model_copy(update={"end": max(spans[-1].end, reply.now + extend)}))
    return reply.model_copy(update={"now": now, "spans": spans})


def with_asleep(reply: TimelineReply, asleep_since: float | None) -> TimelineReply:
    """The record with the time since the box went to sleep shown asleep, not "no record" (an asleep agent records
    nothing; `asleep_since`: when the app saw it go, core.last_known, Unix seconds; None: it is not asleep).
    Never over what the agent recorded."""
    if asleep_since is None:
        return reply
    start = max([asleep_since, *(span.end for span in reply.spans)])
    if reply.now - start < 1.0:
        return reply
    asleep = TimelineSpan.model_validate({"start": start, "end": reply.now, "state": SegmentKind.ASLEEP.value,
                                          "class": "", "subject": ""})
    return reply.model_copy(update={"spans": (*reply.spans, asleep)})


def _kind(span: TimelineSpan, unknown: list[str]) -> SegmentKind:
    try:
        kind = SegmentKind(span.state)
    except ValueError:
        unknown.append(span.state)
        return SegmentKind.OFFLINE
    return SegmentKind.IDLE if kind is SegmentKind.OFFLINE else kind  # the agent never sends "offline"


def _merge(segments: Iterable[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for seg in segments:
        if out and out[-1].kind is seg.kind and out[-1].words == seg.words and seg.start - out[-1].end < 1.0:
            last = out[-1]
            out[-1] = replace(last, end=seg.end)
        else:
            out.append(seg)
    return out


STRIP_LEGEND = ", ".join(f"{'blank' if spec.char == ' ' else spec.char} {spec.legend}" for spec in KINDS.values())
"""The text strip's legend: "# busy, + kept awake after work, ! past ceiling, - idle, z asleep, blank no record"."""


def text_strip(summary: TimelineSummary, width: int = 48) -> str:
    """The strip as text, oldest left: each character the kind that filled most of its slice
    (awake kinds win a tie, so a short burst of work still shows)."""
    slice_seconds = (summary.end - summary.start) / width
    out = []
    for i in range(width):
        lo, hi = summary.start + i * slice_seconds, summary.start + (i + 1) * slice_seconds
        filled: dict[SegmentKind, float] = {}
        for seg in summary.segments:
            overlap = min(hi, seg.end) - max(lo, seg.start)
            if overlap > 0:
                filled[seg.kind] = filled.get(seg.kind, 0.0) + overlap
        best = max(filled, key=lambda k: (filled[k] + (slice_seconds if k in AWAKE_KINDS and filled[k] >= 60 else 0),
                                          k in AWAKE_KINDS), default=SegmentKind.OFFLINE)
        out.append(KINDS[best].char)
    return "".join(out)


def cost_words(summary: TimelineSummary, hourly_price: float | None) -> str | None:
    """ "≈ 3.36 for 9 h 20 min up, at 0.36 an hour" — None when no price is set."""
    if hourly_price is None or not math.isfinite(hourly_price) or hourly_price < 0:
        return None
    up = summary.up_seconds
    cost = up / 3600.0 * hourly_price
    awake_cost = summary.awake_seconds / 3600.0 * hourly_price
    return (f"≈ {cost:.2f} for {format_duration(up)} up ({awake_cost:.2f} of it awake for work), "
            f"at {hourly_price:g} an hour")


def period_words(window_seconds: float) -> str:
    """ "in the last 24 h" """
    return f"in the last {format_duration(window_seconds)}"


_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_since(text: str, longest: float = 7 * DAY_SECONDS) -> float:
    """ "24h", "90m", "2d", "3600" (seconds) -> seconds; ValueError in words for anything else."""
    raw = text.strip().lower().replace(" ", "")
    number, unit = raw, "s"
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if raw.endswith(suffix):
            number, unit = raw[: -len(suffix)], suffix
            break
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a duration (try 24h, 90m, 2d)") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} must be a positive duration")
    if value > longest:
        raise ValueError(f"{text!r} is longer than the {format_duration(longest)} an agent keeps")
    return value
