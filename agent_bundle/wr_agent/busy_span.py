"""The last busy span, told in the status that reports IDLE: how long the work ran and what it mostly was,
so the app can say "box1 finished — compiling for 42 min" without asking for the why-awake record (that
request would put bytes on an idle box's wire). See docs/protocol.md ("last_busy_span").

A span runs from the tick the classifier turns BUSY to the tick it turns IDLE again. Its `seconds` are from
its first BUSY vote to its last (the hold after work is not work); its class is the one whose reason voted
first on the most ticks, named by the same row the why-awake record uses (`reasons.timeline_key`).
Only a span that ends while the verdict was published BUSY is reported: one that ends suppressed (nobody
answered the ceiling prompt) changes nothing a user sees, and telling it would wake a quiet wire.
"""

from wr_agent import reasons as reasons_mod

_NOT_WORK = (reasons_mod.HOLD, reasons_mod.RESUME, reasons_mod.RESTORED, reasons_mod.MORE)
SLEPT_GAP_SECONDS = 5.0
"""A pause between two ticks this long is the box asleep (frozen, suspended), not a slow tick: it is not busy time."""


class BusySpan(object):
    NOT_HANDED_OFF = (
        "tick_seconds",  # the new process's own
        "_prev",  # the previous tick's time: the first tick after a hand-off counts as one tick
    )
    """Attributes a hand-off does not carry (`to_state` carries the rest); tests/unit/agent/
    test_agent_handoff_state.py fails on an attribute neither carried nor named here."""

    def __init__(self, tick_seconds=1.0):
        self.tick_seconds = tick_seconds
        self.last = None  # the status field: dict or None
        self._reset()
        self._prev = None  # monotonic time of the previous tick

    def _reset(self):
        self.start = None
        self.first_vote = None
        self.last_vote = None
        self.classes = {}  # (class, subject) -> seconds
        self.slept = False
        self.asleep = 0.0  # seconds of this span the box spent asleep (tick pauses of SLEPT_GAP_SECONDS or more)

    def busy_seconds(self, now):
        """How long this span's work has gone on as of `now`, less the time the box slept (the status's
        `busy_seconds`: the app's "Busy for", which keep does not restart); None outside a span."""
        if self.start is None:
            return None
        return max(0.0, now - self.start - self.asleep)

    def step(self, now, busy, published_before, reasons, gap_now):
        """One tick: `reasons` as published (`reasons.make` dicts, made plain), `gap_now` when the box slept just
        before it."""
        prev, self._prev = self._prev, now
        if busy:
            if self.start is None:
                self.start = now
            elif prev is not None and now - prev >= SLEPT_GAP_SECONDS:
                self.asleep += now - prev - self.tick_seconds
            if gap_now:
                self.slept = True
            first = reasons[0] if reasons else None
            if first is not None and first["class"] not in _NOT_WORK:
                if self.first_vote is None:
                    self.first_vote = now
                self.last_vote = now
                dt = self.tick_seconds if prev is None or gap_now else min(now - prev, 2 * self.tick_seconds)
                key = reasons_mod.timeline_key(first)
                self.classes[key] = self.classes.get(key, 0.0) + max(0.0, dt)
            return
        if self.start is None:
            return
        if published_before:
            self.last = self._told(now)
        self._reset()

    def _told(self, now):
        seconds = 0.0
        cls, subject = "", ""
        if self.first_vote is not None:
            seconds = self.last_vote - self.first_vote + self.tick_seconds
            cls, subject = max(sorted(self.classes), key=lambda k: self.classes[k])
        return {"ended": now, "seconds": round(seconds, 1), "class": cls, "subject": subject, "slept": self.slept}

    # -- hand-off ----------------------------------------------------------------------------------------
    def to_state(self):
        return {"start": self.start, "first_vote": self.first_vote, "last_vote": self.last_vote,
                "classes": [[c, s, v] for (c, s), v in sorted(self.classes.items())], "slept": self.slept,
                "asleep": self.asleep, "last": self.last}

    def restore(self, d):
        """Restore from a hand-off state (raises ValueError on a malformed one)."""
        for key in ("start", "first_vote", "last_vote", "asleep"):
            if not _number_or_none(d.get(key)):
                raise ValueError("bad busy span %s" % key)
        classes = {}
        for item in d.get("classes") or []:
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                    and isinstance(item[1], str) and _number_or_none(item[2]) and item[2] is not None):
                raise ValueError("bad busy span class %r" % (item,))
            classes[(item[0], item[1])] = float(item[2])
        last = d.get("last")
        if last is not None and not (isinstance(last, dict) and _number_or_none(last.get("ended"))
                                     and _number_or_none(last.get("seconds"))
                                     and isinstance(last.get("class"), str) and isinstance(last.get("subject"), str)
                                     and isinstance(last.get("slept"), bool)):
            raise ValueError("bad last busy span")
        self.start, self.first_vote, self.last_vote = d.get("start"), d.get("first_vote"), d.get("last_vote")
        self.classes, self.slept, self.last = classes, bool(d.get("slept")), last
        self.asleep = float(d.get("asleep") or 0.0)


def _number_or_none(v):
    return v is None or (not isinstance(v, bool) and isinstance(v, (int, float)) and v == v)
