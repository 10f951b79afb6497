"""The why-awake record: what the agent published, minute by minute, and the reason class behind it.

Bounded (7 days and a fixed byte budget, oldest dropped first), coalesced (a run of minutes with the same
state, class, main process and its recorded detail, a connection's peer, is one span) and kept across
hand-offs and restarts in a file beside the settings. The tick only counts seconds in memory (`note`); a
writer thread saves every few minutes and on stop, so the tick never waits on disk. A file that cannot be
read is renamed aside and reported in every `timeline` reply; the agent starts a fresh record.
See docs/agent.md ("Why-awake timeline").
"""

import json
import os
import threading
import time

from wr_agent import clocks, reasons
from wr_agent.agent_log import log
from wr_agent.runtime import read_data_file, write_atomically

FORMAT = 1
BUCKET_SECONDS = 60.0  # resolution of the record: a mixed minute becomes a few spans laid end to end
GAP_SECONDS = 30.0  # no tick for this long (wall clock): the box was asleep (or the agent frozen)
KEEP_SECONDS = 7 * 24 * 3600.0
BUDGET_BYTES = 128 * 1024  # the file's size at most (each span's JSON counted, plus a little framing)
SAVE_SECONDS = 300.0
MAX_FILE_BYTES = 4 * BUDGET_BYTES
REPLY_BYTES = 48 * 1024  # one reply stays well under the protocol's 64 KiB line
JOIN_SLACK = 2.0  # spans this close with the same key are one span
# The wall clock moved this much more (or less) than the time that passed between two ticks: it stepped.
STEP_SECONDS = 2.0
# Spans older than keep_seconds are dropped only once the wall clock has run this long without a step, so a
# clock set far ahead for a moment cannot expire the whole record.
STEADY_SECONDS = 3600.0

# States (the published verdict and why): see docs/protocol.md ("timeline").
BUSY, HELD, CEILING, IDLE, ASLEEP = "busy", "held", "ceiling", "idle", "asleep"
STATES = (BUSY, HELD, CEILING, IDLE, ASLEEP)


def key_for(published_busy, classifier_busy, exceeded, suppressed, busy_reasons):
    """(state, class, subject, detail) for one tick, from what the agent publishes (reasons as `reasons.make`
    makes them; only the first counts). `detail`: `reasons.timeline_detail`, () for most classes."""
    first = busy_reasons[0] if busy_reasons else None
    if first is None:
        cls, subject, detail = reasons.OTHER, "", ()
    else:
        (cls, subject), detail = reasons.timeline_key(first), reasons.timeline_detail(first)
    if first is not None and first["class"] == reasons.HOLD:
        return (CEILING if exceeded else HELD), cls, subject, detail
    if suppressed or (exceeded and classifier_busy):
        return CEILING, cls, subject, detail
    if published_busy:
        if first is not None and first["class"] == reasons.RESUME:
            return HELD, cls, subject, detail
        return BUSY, cls, subject, detail
    return IDLE, "", "", ()


def _row(span):
    """A span as the file keeps it: [start, end, state, class, subject], then its detail as an object when it
    has one (a record without details reads as an older agent wrote it)."""
    row = list(span[:5])
    if span[5]:
        row.append(dict(span[5]))
    return row


def _span_bytes(span):
    return len(json.dumps(_row(span), separators=(",", ":"))) + 1


def _span(span):
    """A 5- or 6-item span as the 6-tuple the record holds (no detail: ())."""
    return tuple(span) if len(span) == 6 else (*span, ())


class Timeline(object):
    """Spans are tuples (start, end, state, class, subject, detail); start/end are Unix seconds (wall clock).

    Where a span lies is wall time (the record outlives reboots and is read on another computer); how long
    it lasts, and whether the box slept between two ticks, is measured on `mono`, a clock that counts
    suspend and never steps (clocks.suspend_aware). A wall clock that moved more or less than `mono` did
    between two ticks stepped: the record re-anchors at the new wall time and drops what lies after it."""

    def __init__(self, path=None, clock=time.time, keep_seconds=KEEP_SECONDS, budget_bytes=BUDGET_BYTES,
                 save_seconds=SAVE_SECONDS, mono=clocks.suspend_aware):
        self.path = path
        self.clock = clock
        self.mono = mono
        self.keep_seconds = keep_seconds
        self.budget_bytes = budget_bytes
        self.save_seconds = save_seconds
        self.lock = threading.Lock()
        self.spans = []
        self._bytes = 0
        self.problem = None  # why an earlier record was set aside, reported in every reply
        self.last_note = None
        self._last_mono = None  # `mono` at the last note; None until this process's first tick
        self._steady_since = None  # `mono` when the wall clock last stepped (or this process began)
        self._bucket_start = None
        self._bucket = {}  # (state, class) -> [seconds, {(subject, detail): seconds}]
        self._dirty = False
        self._restored = False
        self._stop = threading.Event()
        self._thread = None
        if path is not None:
            self._load()

    # -- the tick's side (memory only) ---------------------------------------------------------------------
    def note(self, key, now=None, mono=None):
        """Count the time since the last tick under `key` (state, class, subject[, detail]). Called by the tick."""
        now = self.clock() if now is None else now
        mono = self.mono() if mono is None else mono
        with self.lock:
            last, last_mono = self.last_note, self._last_mono
            self.last_note, self._last_mono = now, mono
            if self._steady_since is None:
                self._steady_since = mono
            restored, self._restored = self._restored, False
            if last_mono is None:
                # This process's first tick: only a restored record's last wall time says where it stopped.
                if last is None or not restored or not 0 <= now - last < GAP_SECONDS:
                    # A first tick, a clock behind the record, or the agent's absence after a restart
                    # (left unrecorded): start counting from here.
                    self._close_bucket()
                    self._bucket_start = now
                    return
                dt = now - last  # a hand-off's second without ticks is not a gap
            else:
                dt = mono - last_mono
                if abs((now - last) - dt) > STEP_SECONDS:
                    self._reanchor(now, mono, dt)
                    return
                if dt >= GAP_SECONDS:
                    self._close_bucket()
                    self._add((now - dt, now, ASLEEP, "", "", ()))
                    self._bucket_start = now
                    return
                dt = max(0.0, dt)
            if self._bucket_start is None:
                self._bucket_start = last
            if now >= (self._bucket_start // BUCKET_SECONDS + 1) * BUCKET_SECONDS:
                self._close_bucket()
                self._bucket_start = last
            state, cls, subject = key[:3]
            who = (subject, key[3] if len(key) > 3 else ())
            entry = self._bucket.get((state, cls))
            if entry is None:
                entry = self._bucket[(state, cls)] = [0.0, {}]
            entry[0] += dt
            entry[1][who] = entry[1].get(who, 0.0) + dt

    def _reanchor(self, now, mono, slept):
        """The wall clock stepped (an NTP step, a clock set by hand, a restored VM): the open minute is closed
        where it was, whatever lies after the new wall time is dropped (it never happened: a clock set a year
        ahead and corrected must not leave a span to that date), and counting starts again at `now`. A sleep
        that passed meanwhile (measured on `mono`) ends at `now`."""
        self._close_bucket()
        self._cut_after(now)
        self._steady_since = mono
        if slept >= GAP_SECONDS:
            self._add((now - slept, now, ASLEEP, "", "", ()))
        self._bucket_start = now

    def _cut_after(self, now):
        """Drop what lies after `now`: spans that start later go, a span running past it ends there."""
        kept = []
        for span in self.spans:
            if span[0] >= now:
                continue
            if span[1] > now:
                span = (span[0], round(now, 1), *span[2:])
                if span[1] <= span[0]:
                    continue
            kept.append(span)
        if len(kept) != len(self.spans) or kept[-1:] != self.spans[-1:]:
            self.spans = kept
            self._bytes = sum(_span_bytes(s) for s in kept)
            self._dirty = True
            return True
        return False

    def _pieces(self):
        """The open minute as spans laid end to end from its start, each state in the order it was first seen; each
        names the process (and detail) it saw most."""
        if self._bucket_start is None or not self._bucket:
            return []
        out, at = [], self._bucket_start
        for (state, cls), (seconds, subjects) in self._bucket.items():  # in the order first seen
            subject, detail = max(sorted(subjects), key=lambda s: subjects[s])
            out.append((at, at + seconds, state, cls, subject, detail))
            at += seconds
        return out

    def _close_bucket(self):
        for piece in self._pieces():
            self._add(piece)
        self._bucket = {}
        self._bucket_start = None

    def _add(self, span):
        start, end, state, cls, subject, detail = _span(span)
        start, end = round(start, 1), round(end, 1)
        if end <= start:
            return
        if self.spans:
            last = self.spans[-1]
            cut = _after(last[1], (start, end, state, cls, subject, detail))
            if cut is None:
                return
            start = cut[0]
            if last[2:] == (state, cls, subject, detail) and 0 <= start - last[1] <= JOIN_SLACK:
                self._bytes -= _span_bytes(last)
                merged = (last[0], end, state, cls, subject, detail)
                self.spans[-1] = merged
                self._bytes += _span_bytes(merged)
                self._dirty = True
                return
        span = (start, end, state, cls, subject, detail)
        self.spans.append(span)
        self._bytes += _span_bytes(span)
        self._dirty = True
        self._trim()

    def _trim(self):
        """Keep the byte budget always, and the age limit once the wall clock is trusted: it has run
        STEADY_SECONDS without a step (a clock set far ahead for a moment must not expire the record)."""
        cutoff = None
        if (self._last_mono is not None and self._steady_since is not None
                and self._last_mono - self._steady_since >= STEADY_SECONDS):
            cutoff = self.last_note - self.keep_seconds
        drop = 0
        while drop < len(self.spans) and ((cutoff is not None and self.spans[drop][1] < cutoff)
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
            obj.update(s[5])  # a connection's peer, port or local_port (docs/protocol.md, "Why-awake timeline")
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
        now = self.clock()
        if self._cut_after(now):  # saved while the wall clock was ahead: it never happened
            log.warning("the why-awake record %s reached past now (the wall clock had been ahead); what lay "
                        "after now was dropped", self.path)
        self.last_note = last_note if last_note is None or last_note <= now else None
        self._restored = True
        self._dirty = False

    def snapshot_bytes(self):
        """The file's content now: the closed spans and the open minute, under the lock (a copy, quick)."""
        with self.lock:
            spans = _joined(self.spans, self._pieces())
            last_note = self.last_note
            self._dirty = False
        body = {"format": FORMAT, "last_note": last_note, "spans": [_row(s) for s in spans]}
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


_DETAIL_CHECKS = {
    "peer": lambda v: isinstance(v, str) and 0 < len(v) <= 64,
    "port": lambda v: _number(v) and v == int(v) and 0 <= v <= 65535,
    "local_port": lambda v: _number(v) and v == int(v) and 0 <= v <= 65535,
}


def _detail(item):
    """A saved span's detail object -> the record's sorted pairs (ValueError for a key or value no agent
    writes)."""
    if not isinstance(item, dict) or not item or not all(
            k in _DETAIL_CHECKS and _DETAIL_CHECKS[k](v) for k, v in item.items()):
        raise ValueError("bad span detail %r" % (item,))
    return tuple(sorted((k, v if k == "peer" else int(v)) for k, v in item.items()))


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
        if not (isinstance(item, list) and len(item) in (5, 6) and _number(item[0]) and _number(item[1])
                and item[0] <= item[1] and item[2] in STATES and isinstance(item[3], str)
                and isinstance(item[4], str) and len(item[3]) <= 32 and len(item[4]) <= 64):
            raise ValueError("bad span %r" % (item,))
        if prev_end is not None and item[0] < prev_end - JOIN_SLACK:
            overlaps += 1  # an older agent's record after a backward clock step: `_load` drops the overlap
        prev_end = item[1] if prev_end is None else max(prev_end, item[1])
        spans.append((*item[:5], _detail(item[5]) if len(item) == 6 else ()))
    return spans, last_note, overlaps
