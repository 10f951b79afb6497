"""What kept a box awake, in words: the agent's why-awake record cut to a window, summed and phrased.

Pure (no Qt, no I/O): the strip widget and `workroom why` both draw from `summarise`, so the app and the
CLI say the same thing. Times are the agent's wall clock (Unix seconds), so a box whose clock differs from
this computer's is still read consistently. See docs/agent.md ("Why-awake timeline").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from workroom.core.protocol import TimelineReply, TimelineSpan

__all__ = [
    "DAY_SECONDS",
    "STRIP_LEGEND",
    "Segment",
    "SegmentKind",
    "TimelineSummary",
    "activity",
    "advanced",
    "cost_words",
    "format_duration",
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

# Process names (comm, at most 15 characters) that mean "compiling" to a developer.
_COMPILERS = frozenset({
    "cc", "cc1", "cc1plus", "cc1obj", "gcc", "g++", "c++", "clang", "clang++", "ld", "ld.lld", "ld.gold",
    "lld", "mold", "as", "collect2", "rustc", "cargo", "make", "gmake", "ninja", "cmake", "javac", "kotlinc",
    "go", "compile", "link", "tsc", "esbuild", "swiftc", "swift-frontend", "ghc", "bazel", "gradle",
    "msbuild", "dotnet", "zig", "nvcc", "ocamlopt", "scalac", "webpack", "vite",
})
_TEST_RUNNERS = frozenset({"pytest", "py.test", "jest", "vitest", "mocha", "rspec", "ctest", "tox", "nox"})
_SSH = frozenset({"ssh", "scp", "sftp", "mosh-client", "mosh-server", "autossh"})
_FETCHERS = frozenset({"curl", "wget", "git", "git-remote-http", "pip", "pip3", "npm", "yarn", "pnpm",
                       "apt", "apt-get", "http", "rsync", "aria2c", "docker-pull"})
_CLASS_WORDS = {
    "cpu": "running {s}",
    "disk": "disk work by {s}",
    "sleep": "a job waiting on a timer ({s})",
    "fifo": "a pipeline stage waiting for its partner ({s})",
    "tcp": "a network connection held by {s}",
    "tty_output": "terminal output",
    "keystroke": "typing in a terminal",
    "net": "network traffic",
    "operation": "an agent operation",
    "other": "other work",
}
_CLASS_WORDS_NO_SUBJECT = {
    "cpu": "CPU work",
    "disk": "disk work",
    "sleep": "a job waiting on a timer",
    "tcp": "a network connection",
    "fifo": "a pipeline stage waiting for its partner",
}


def activity(reason_class: str, subject: str) -> str:
    """A reason class and process in a developer's words: ("cpu", "cc1") -> "compiling"."""
    if reason_class in ("cpu", "disk", "sleep") and subject in _COMPILERS:
        return "compiling"
    if reason_class in ("cpu", "disk", "sleep") and subject in _TEST_RUNNERS:
        return "running tests"
    if reason_class == "tcp" and subject in _SSH:
        return "an ssh session"
    if reason_class in ("tcp", "cpu") and subject in _FETCHERS:
        return "downloading"
    if not subject and reason_class in _CLASS_WORDS_NO_SUBJECT:
        return _CLASS_WORDS_NO_SUBJECT[reason_class]
    template = _CLASS_WORDS.get(reason_class)
    if template is None:
        return "other work"
    return template.format(s=subject) if "{s}" in template else template


@dataclass(frozen=True)
class Segment:
    """One stretch of the strip: [start, end) in the agent's Unix seconds."""

    start: float
    end: float
    kind: SegmentKind
    reason_class: str = ""
    subject: str = ""

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def words(self) -> str:
        """What this stretch was, for a tooltip: "compiling", "held after work", "asleep"."""
        if self.kind is SegmentKind.BUSY:
            return activity(self.reason_class, self.subject)
        return _KIND_WORDS[self.kind]


_KIND_WORDS = {
    SegmentKind.HELD: "held after work",
    SegmentKind.CEILING: "busy past the awake ceiling",
    SegmentKind.IDLE: "idle",
    SegmentKind.ASLEEP: "asleep",
    SegmentKind.OFFLINE: "no record (agent not running or unreachable)",
}


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
        segments.append(Segment(s, e, kind, span.reason_class, span.subject))
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
            out[-1] = Segment(last.start, seg.end, last.kind, last.reason_class, last.subject)
        else:
            out.append(seg)
    return out


_STRIP_CHARS = {SegmentKind.BUSY: "#", SegmentKind.HELD: "+", SegmentKind.CEILING: "!", SegmentKind.IDLE: "-",
                SegmentKind.ASLEEP: "z", SegmentKind.OFFLINE: " "}
STRIP_LEGEND = "# busy, + held after work, ! past ceiling, - idle, z asleep, blank no record"


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
        out.append(_STRIP_CHARS[best])
    return "".join(out)


def format_duration(seconds: float) -> str:
    """Whole minutes in words: "9 h 20 min", "6 h", "20 min", "under a minute"."""
    minutes = round(seconds / 60.0)
    if minutes < 1:
        return "under a minute"
    hours, minutes = divmod(minutes, 60)
    if hours and minutes:
        return f"{hours} h {minutes} min"
    return f"{hours} h" if hours else f"{minutes} min"


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
