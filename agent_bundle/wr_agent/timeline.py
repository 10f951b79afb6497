"""The why-awake record: what the agent published, minute by minute, and the reason class behind it.

Bounded (7 days and a fixed byte budget, oldest dropped first), coalesced (a run of minutes with the same
state, class and main process is one span) and kept across hand-offs and restarts in a file beside the
settings. The tick only counts seconds in memory (`note`); a writer thread saves every few minutes and on
stop, so the tick never waits on disk. A file that cannot be read is renamed aside and reported in every
`timeline` reply; the agent starts a fresh record. See docs/agent.md ("Why-awake timeline").
"""

import json
import logging
import os
import threading
import time

from wr_agent import reasons
from wr_agent.runtime import read_data_file, write_atomically

log = logging.getLogger("wr_agent")

FORMAT = 1
BUCKET_SECONDS = 60.0  # resolution of the record: a mixed minute becomes a few spans laid end to end
GAP_SECONDS = 30.0  # no tick for this long (wall clock): the box was asleep (or the agent frozen)
KEEP_SECONDS = 7 * 24 * 3600.0
BUDGET_BYTES = 128 * 1024  # the file's size at most (each span's JSON counted, plus a little framing)
SAVE_SECONDS = 300.0
MAX_FILE_BYTES = 4 * BUDGET_BYTES
REPLY_BYTES = 48 * 1024  # one reply stays well under the protocol's 64 KiB line
JOIN_SLACK = 2.0  # spans this close with the same key are one span

# States (the published verdict and why): see docs/protocol.md ("timeline").
BUSY, HELD, CEILING, IDLE, ASLEEP = "busy", "held", "ceiling", "idle", "asleep"
STATES = (BUSY, HELD, CEILING, IDLE, ASLEEP)


def key_for(published_busy, classifier_busy, exceeded, suppressed, busy_reasons):
    """(state, class, subject) for one tick, from what the agent publishes (reasons as `reasons.make` makes them;
    only the first counts)."""
    first = busy_reasons[0] if busy_reasons else None
    cls, subject = reasons.timeline_key(first) if first is not None else (reasons.OTHER, "")
    if first is not None and first["class"] == reasons.HOLD:
        return (CEILING if exceeded else HELD), cls, subject
    if suppressed or (exceeded and classifier_busy):
        return CEILING, cls, subject
    if published_busy:
        if first is not None and first["class"] == reasons.RESUME:
            return HELD, cls, subject
        return BUSY, cls, subject
    return IDLE, "", ""


def _span_bytes(span):
    return len(json.dumps(list(span), separators=(",", ":"))) + 1


class Timeline(object):
    """Spans are tuples (start, end, state, class, subject); start/end are Unix seconds (wall clock)."""

    def __init__(self, path=None, clock=time.time, keep_seconds=KEEP_SECONDS, budget_bytes=BUDGET_BYTES,
                 save_seconds=SAVE_SECONDS):
        self.path = path
        self.clock = clock
        self.keep_seconds = keep_seconds
        self.budget_bytes = budget_bytes
        self.save_seconds = save_seconds
        self.lock = threading.Lock()
        self.spans = []
        self._bytes = 0
        self.problem = None  # why an earlier record was set aside, reported in every reply
        self.last_note = None
        self._bucket_start = None
        self._bucket = {}  # (state, class) -> [seconds, {subject: seconds}]
        self._dirty = False
        self._restored = False
        self._stop = threading.Event()
        self._thread = None
        if path is not None:
            self._load()

    # -- the tick's side (memory only) ---------------------------------------------------------------------
    def note(self, key, now=None):
        """Count the time since the last tick under `key` (state, class, subject). Called by the tick."""
        now = self.clock() if now is None else now
        with self.lock:
            last = self.last_note
            self.last_note = now
            if last is None or now < last:
                # First tick, or the wall clock stepped back: start counting from here. Time the record
                # already covers is not recorded again (`_after`), so the record stays in order.
                self._close_bucket()
                self._bucket_start = now
                return
            restored, self._restored = self._restored, False
            if now - last >= GAP_SECONDS:
                self._close_bucket()
                if not restored:  # after a restart the gap is the agent's absence: left unrecorded
                    self._add((last, now, ASLEEP, "", ""))
                self._bucket_start = now
                return
            if self._bucket_start is None:
                self._bucket_start = last
            if now >= (self._bucket_start // BUCKET_SECONDS + 1) * BUCKET_SECONDS:
                self._close_bucket()
                self._bucket_start = last
            state, cls, subject = key
            entry = self._bucket.get((state, cls))
            if entry is None:
                entry = self._bucket[(state, cls)] = [0.0, {}]
            dt = now - last
            entry[0] += dt
            entry[1][subject] = entry[1].get(subject, 0.0) + dt

    def _pieces(self):
        """The open minute as spans laid end to end from its start, each state in the order it was first seen."""
        if self._bucket_start is None or not self._bucket:
            return []
        out, at = [], self._bucket_start
        for (state, cls), (seconds, subjects) in self._bucket.items():  # in the order first seen
            subject = max(sorted(subjects), key=lambda s: subjects[s])
            out.append((at, at + seconds, state, cls, subject))
            at += seconds
        return out

    def _close_bucket(self):
        for piece in self._pieces():
            self._add(piece)
        self._bucket = {}
        self._bucket_start = None

    def _add(self, span):
        start, end, state, cls, subject = span
        start, end = round(start, 1), round(end, 1)
        if end <= start:
            return
        if self.spans:
            last = self.spans[-1]
            cut = _after(last[1], (start, end, state, cls, subject))
            if cut is None:
                return
            start = cut[0]
            if last[2:] == (state, cls, subject) and 0 <= start - last[1] <= JOIN_SLACK:
                self._bytes -= _span_bytes(last)
                merged = (last[0], end, state, cls, subject)
                self.spans[-1] = merged
                self._bytes += _span_bytes(merged)
                self._dirty = True
                return
        span = (start, end, state, cls, subject)
        self.spans.append(span)
        self._bytes += _span_bytes(span)
        self._dirty = True
        self._trim(end)

    def _trim(self, now):
        drop = 0
        while drop < len(self.spans) and (self.spans[drop][1] < now - self.keep_seconds
                                          or self._bytes > self.budget_bytes):
            self._bytes -= _span_bytes(self.spans[drop])
            drop += 1
        if drop:
            del self.spans[:drop]

    # -- reading -------------------------------------------------------------------------------------------
    def query(self, since=None, limit_bytes=REPLY_BYTES):
        """The `timeline` reply: spans ending after `since`, oldest first, at most `limit_bytes` of them."""
        with self.lock:
            now = self.clock()
            spans = _joined(self.spans, self._pieces())
            problem = self.problem
        out, size, more = [], 0, None
        for s in spans:
            if since is not None and s[1] <= since:
                continue
            obj = {"start": s[0], "end": s[1], "state": s[2], "class": s[3], "subject": s[4]}
            size += len(json.dumps(obj)) + 1
            if size > limit_bytes and out:
                more = s[0]
                break
            out.append(obj)
        return {"now": now, "spans": out, "more_since": more, "keep_seconds": self.keep_seconds,
                "problem": problem}

    # -- persistence (never on the tick's thread) ---------------------------------------------------------
    def _load(self):
        try:
            raw = read_data_file(self.path, MAX_FILE_BYTES)
            if raw is None:
                return
            spans, last_note, overlaps = _parse(raw)
        except OSError as exc:
            self.problem = "the why-awake record %s could not be read (%s); starting a new one" % (
                self.path, exc.strerror or exc)
            log.error("%s", self.problem)
            return
        except ValueError as exc:
            aside = "%s.corrupt" % self.path
            try:
                os.replace(self.path, aside)
                where = "kept as %s" % aside
            except OSError as exc2:
                where = "could not be moved aside (%s)" % (exc2.strerror or exc2)
            self.problem = "the why-awake record %s was unreadable (%s) and %s; a new record started" % (
                self.path, exc, where)
            log.error("%s", self.problem)
            return
        if overlaps:  # saved by an older agent after a backward clock step: repaired as a live step is
            log.warning("the why-awake record %s had %d spans overlapping earlier ones (the wall clock had "
                        "stepped back); the overlapping time was dropped", self.path, overlaps)
        for span in spans:
            self._add(span)  # drops what lies before the end of the span before it
        self._trim(self.clock())
        self.last_note = last_note  # a hand-off's second without ticks is not a gap
        self._restored = True
        self._dirty = False

    def snapshot_bytes(self):
        """The file's content now: the closed spans and the open minute, under the lock (a copy, quick)."""
        with self.lock:
            spans = _joined(self.spans, self._pieces())
            last_note = self.last_note
            self._dirty = False
        body = {"format": FORMAT, "last_note": last_note, "spans": [list(s) for s in spans]}
        return json.dumps(body, separators=(",", ":")).encode("utf-8") + b"\n"

    def save(self):
        """Write atomically (temp file, fsync, rename), mode 0600. Returns False (logged) on an error."""
        if self.path is None:
            return True
        try:
            write_atomically(self.path, self.snapshot_bytes())
            return True
        except OSError as exc:
            log.warning("could not save the why-awake record to %s: %s", self.path, exc.strerror or exc)
            return False

    def _writer(self):
        while not self._stop.wait(self.save_seconds):
            if self._dirty or self._bucket:
                self.save()

    def start(self):
        if self.path is None or (self._thread is not None and self._thread.is_alive()):
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._writer, name="wr-agent-timeline", daemon=True)
        self._thread.start()

    def stop(self):
        """Stop the writer and save once more (at exit and before a hand-off)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
            self._thread = None
        self.save()


def _after(prev_end, span):
    """`span` without what lies before `prev_end`, or None when nothing is left. After the wall clock
    stepped back, the ticks until it passes the record's newest time again are not recorded: the record
    already covers those times, and the past is not rewritten."""
    if span[0] >= prev_end:
        return span
    if span[1] <= prev_end:
        return None
    return (prev_end, *span[1:])


def _joined(spans, pieces):
    """The closed spans followed by the open minute's pieces, a piece continuing the last span merged in."""
    out = list(spans)
    for p in pieces:
        if out:
            p = _after(out[-1][1], p)
            if p is None:
                continue
        if out and out[-1][2:] == p[2:] and 0 <= p[0] - out[-1][1] <= JOIN_SLACK:
            out[-1] = (out[-1][0], p[1], *p[2:])
        else:
            out.append(p)
    return out


def _number(v):
    return not isinstance(v, bool) and isinstance(v, (int, float)) and v == v and abs(v) < 1e12


def _parse(raw):
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("not JSON: %s" % exc) from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT or not isinstance(obj.get("spans"), list):
        raise ValueError("not a format-%d record" % FORMAT)
    last_note = obj.get("last_note")
    if last_note is not None and not _number(last_note):
        raise ValueError("bad last_note")
    spans, prev_end, overlaps = [], None, 0
    for item in obj["spans"]:
        if not (isinstance(item, list) and len(item) == 5 and _number(item[0]) and _number(item[1])
                and item[0] <= item[1] and item[2] in STATES and isinstance(item[3], str)
                and isinstance(item[4], str) and len(item[3]) <= 32 and len(item[4]) <= 64):
            raise ValueError("bad span %r" % (item,))
        if prev_end is not None and item[0] < prev_end - JOIN_SLACK:
            overlaps += 1  # an older agent's record after a backward clock step: `_load` drops the overlap
        prev_end = item[1] if prev_end is None else max(prev_end, item[1])
        spans.append(tuple(item))
    return spans, last_note, overlaps
