"""What the app last knew of a host, as one record every face reads (the window, the tray, the CLI, the next
start): what the box was doing when its agent last spoke, what the agent told the provider, since when, and
since when the box has been asleep.

"Doing" is the classifier's verdict, what a person means by busy: a box let sleep (or left unanswered past its
ceiling) while its job ran was busy, though its agent told the provider idle so the box could sleep. "Reported"
is the published verdict, which decides whether a box put to sleep was cut short while kept awake
(`suspended while busy`). Times are Unix seconds, so a record written by one process (or run) means the same
in the next. Kept in last_verdicts.json by the engine; a damaged or foreign entry reads as nothing known.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from workroom.core.durations import format_duration
from workroom.core.host_text import plain

if TYPE_CHECKING:
    from workroom.core.protocol import Status

VERDICT_WORDS = ("busy", "idle")
MAX_REASONS = 3
MAX_REASON_CHARS = 120


def _number(value: object) -> float | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _reasons(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(plain(v, MAX_REASON_CHARS) for v in value[:MAX_REASONS] if isinstance(v, str) and v)


def _verdict(value: object) -> str | None:
    if isinstance(value, str) and value.lower() in VERDICT_WORDS:
        return value.lower()
    return None


@dataclass(frozen=True)
class LastKnown:
    doing: str | None = None
    """"busy" or "idle": what the box was doing when its agent last spoke (its classifier's verdict)."""
    reported: str | None = None
    """"busy" or "idle": what the agent then told the provider (its published verdict)."""
    since: float | None = None
    """When the box began `doing` that, as far as the app saw."""
    seen_at: float | None = None
    """When its agent last said so."""
    asleep_since: float | None = None
    """When the app first saw the box asleep this time (None: not asleep, or never seen so)."""
    agent_monotonic: float | None = None
    """The agent's own clock at its last status (tells a box that slept or restarted since)."""
    released_at: float | None = None
    """When the app let go of its session on this idle box (where an open session is activity: metering
    `sessions`), so the next start need not open one (sessions/platform_keeper.py, `still_let_go`)."""
    run: str | None = None
    """The platform's identity of the box's run when the app let go (a new run means someone started it)."""
    stopped_at: float | None = None
    """When the box's platform last stopped it, where it says (Coder's stop build, a codespace's idle stop)."""
    stop_reason: str | None = None
    """Why, in the platform's terms ("it reached its deadline (autostop)")."""
    reasons: tuple[str, ...] = ()
    """What kept it busy when its agent last spoke, in the app's words ("compiling: cc1plus"), at most
    `MAX_REASONS`: what a look without the app says (cli/look.py)."""

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> LastKnown:
        """Read a stored record; anything of the wrong type reads as not known (never an error)."""
        if not record:
            return cls()
        reported = _verdict(record.get("verdict"))
        return cls(doing=_verdict(record.get("doing")) or reported, reported=reported,
                   since=_number(record.get("since")), seen_at=_number(record.get("seen_at")),
                   asleep_since=_number(record.get("asleep_since")),
                   agent_monotonic=_number(record.get("agent_monotonic")),
                   released_at=_number(record.get("released_at")),
                   run=record.get("run") if isinstance(record.get("run"), str) else None,
                   stopped_at=_number(record.get("stopped_at")),
                   stop_reason=record.get("stop_reason") if isinstance(record.get("stop_reason"), str) else None,
                   reasons=_reasons(record.get("reasons")))

    def to_record(self) -> dict[str, Any]:
        """The stored form: only what is known ("verdict" is the reported one, as older apps wrote it)."""
        fields = {"verdict": self.reported.upper() if self.reported else None,
                  "doing": self.doing.upper() if self.doing else None, "since": self.since,
                  "seen_at": self.seen_at, "asleep_since": self.asleep_since,
                  "agent_monotonic": self.agent_monotonic, "released_at": self.released_at, "run": self.run,
                  "stopped_at": self.stopped_at, "stop_reason": self.stop_reason,
                  "reasons": list(self.reasons) or None}
        return {key: value for key, value in fields.items() if value is not None}

    @property
    def known(self) -> bool:
        return self.doing is not None

    def seen(self, status: Status, now: float) -> LastKnown:
        """A status heard live at `now`: the box is awake and doing what its agent says. A fresh agent's idle
        while it is still checking (its first look) does not overwrite what an agent before it said (a replaced
        agent's first seconds are no verdict on a job the last one saw); where nothing was known, it is the
        first word."""
        from workroom.core.busy_reasons import work_words  # the wire's models: not for a look that only reads

        if self.known and status.checking() and status.classifier_verdict.value == "IDLE":
            return self

        doing = status.classifier_verdict.value.lower()
        since = self.since if doing == self.doing and self.since is not None else now
        reasons = tuple(w[:MAX_REASON_CHARS] for w in work_words(status, agent_now=status.monotonic)[:MAX_REASONS])
        return LastKnown(doing=doing, reported=status.verdict.value.lower(), since=since, seen_at=now,
                         asleep_since=None, agent_monotonic=status.monotonic, stopped_at=self.stopped_at,
                         stop_reason=self.stop_reason, reasons=reasons if doing == "busy" else ())

    def asleep(self, now: float) -> LastKnown:
        """Seen asleep at `now`: asleep since then, unless it already was."""
        return self if self.asleep_since is not None else replace(self, asleep_since=now, released_at=None, run=None)

    def platform_stopped(self, at: float, reason: str) -> LastKnown:
        """The box's platform says it stopped it at `at`, for `reason` (kept for the why-awake record)."""
        return replace(self, stopped_at=at, stop_reason=reason)

    def stop_note(self, start: float, end: float) -> str | None:
        """"the platform stopped it 2 h ago: it reached its deadline (autostop)", when that falls within the
        window from `start` to `end` (Unix seconds); None otherwise."""
        if self.stopped_at is None or self.stop_reason is None or not start <= self.stopped_at <= end:
            return None
        return f"the platform stopped it {format_duration(max(0.0, end - self.stopped_at))} ago: {self.stop_reason}"

    def let_go(self, now: float, run: str | None) -> LastKnown:
        """The app let go of its session on the idle box at `now` (its platform's run `run`), unless it already
        had."""
        return self if self.released_at is not None else replace(self, released_at=now, run=run)

    def differs_in_meaning(self, other: LastKnown) -> bool:
        """Whether storing `other` over this one changes anything a face says, beyond a newer `seen_at`."""
        return replace(self, seen_at=None, agent_monotonic=None) != replace(other, seen_at=None,
                                                                          agent_monotonic=None)

    def words(self, now: float) -> str:
        """"last known busy (2 min ago)": what the box was doing and how long ago its agent said so; "" when
        nothing is known."""
        if self.doing is None:
            return ""
        if self.seen_at is None:
            return f"last known {self.doing}"
        return f"last known {self.doing} ({format_duration(max(0.0, now - self.seen_at))} ago)"

    def asleep_seconds(self, now: float) -> float | None:
        return None if self.asleep_since is None else max(0.0, now - self.asleep_since)
