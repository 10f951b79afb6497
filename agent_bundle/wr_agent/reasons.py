"""Busy reasons: one row per class the agent can emit (docs/agent.md, "Busy reasons").

A reason is data, `{"class", "subject", "pid", "detail"}`; the status carries it twice, as text in `busy_reasons`
(for people, logs and apps older than `structured_reasons`) and as the data itself in `structured_reasons`, so no
app parses the text. Each row says how its text is written and which class the why-awake record files it under.

Neither the text nor the data may change from tick to tick: a status event is pushed whenever what a user sees
changes, and over SSH each event is traffic that would itself keep a network-metered box awake. So there are no
rates or ages here; a fact with a time (when a TCP wait began) is the moment it began, and the app counts the
duration on its side. `detail` keeps only the keys its row names, so a sampler's passing figures never reach the
wire by accident.
"""

from wr_agent import host_text


class ReasonClass(object):
    """One kind of busy reason: its id, how its text reads, what the record files it under, its detail keys."""

    __slots__ = ("detail", "id", "recorded", "text", "timeline")

    def __init__(self, id, text, timeline, detail=(), recorded=()):
        self.id = id
        self.text = text  # str.format over subject, pid and the detail keys ({after} is the held reason's text)
        self.timeline = timeline  # the record's class; None: the class of the reason it holds (hold)
        self.detail = detail
        self.recorded = recorded  # the detail keys the why-awake record keeps with the span (never a time)


CPU, DISK, SLEEP, FIFO, LOCK, TCP, UNIX = "cpu", "disk", "sleep", "fifo", "lock", "tcp", "unix"
TTY_OUTPUT, KEYSTROKE, NET, OPERATION = "tty_output", "keystroke", "net", "operation"
HOLD, RESUME, MORE, RESTORED = "hold", "resume", "more", "restored"
OTHER = "other"  # the record's class for reasons that name no work of their own

ROWS = (
    ReasonClass(CPU, "cpu: {subject} (pid {pid})", CPU, ("coarse",)),
    ReasonClass(DISK, "disk: {subject} (pid {pid}) in D state", DISK, ("coarse",)),
    ReasonClass(SLEEP, "sleep: {subject} (pid {pid})", SLEEP),
    ReasonClass(FIFO, "fifo: {subject} (pid {pid}) waiting for its partner", FIFO),
    ReasonClass(LOCK, "lock: {subject} (pid {pid}) waiting for a file lock", LOCK),
    # peer ("10.0.0.5"), port (443), since (the agent's status clock when the wait began) and, for a connection
    # that came in, local_port (ours): facts of one connection that stay put while it is work (tcp_rule). The text
    # names only the process, so it reads the same on every tick.
    # The record keeps the peer (not `since`: a span is one stretch of work, and its start says when it began).
    ReasonClass(TCP, "tcp: {subject} (pid {pid})", TCP, ("peer", "port", "since", "local_port"),
                ("peer", "port", "local_port")),
    # A job step waiting on a local server over a Unix stream socket (job_wait): path (the server's socket address,
    # "/var/run/postgresql/.s.PGSQL.5432") and since (when the wait began, the agent's status clock).
    ReasonClass(UNIX, "unix: {subject} (pid {pid})", UNIX, ("path", "since"), ("path",)),
    ReasonClass(TTY_OUTPUT, "tty: output", TTY_OUTPUT),
    ReasonClass(KEYSTROKE, "tty: keystroke", KEYSTROKE),
    ReasonClass(NET, "net: traffic", NET),
    ReasonClass(OPERATION, "agent: operation in flight", OPERATION),
    # Only the hold keeps the verdict BUSY: after (the last reason that voted BUSY, itself a reason).
    ReasonClass(HOLD, "hold: after {after}", None, ("after",)),
    ReasonClass(RESUME, "resume: measuring after a wake", OTHER),
    ReasonClass(MORE, "+{count} more", OTHER, ("count",)),
    # What the hold names after a hand-off from an agent that kept its reasons as text only.
    ReasonClass(RESTORED, "restored", OTHER),
)
BY_ID = dict((row.id, row) for row in ROWS)
TIMELINE_CLASSES = tuple(sorted(set(row.timeline for row in ROWS if row.timeline)))
"""Every class the why-awake record can hold."""
COARSE_SUFFIX = " (coarse)"  # the coarse sampler's reasons say so: it sees CPU and D state only, every few seconds


def _pid(pid):
    if pid is None or isinstance(pid, bool):
        return None
    try:
        return int(pid)
    except (TypeError, ValueError):
        return None


def make(cls, subject="", pid=None, **detail):
    """A reason of class `cls` (a row's id; anything else is a programming error: KeyError)."""
    row = BY_ID[cls]
    kept = dict((k, v) for k, v in detail.items() if k in row.detail and v is not None and v is not False)
    return {"class": cls, "subject": str(subject), "pid": _pid(pid), "detail": kept}


def text(reason):
    """The reason as the text `busy_reasons` carries."""
    row = BY_ID[reason["class"]]
    detail = reason["detail"]
    fields = dict(detail)
    if "after" in detail:
        fields["after"] = text(detail["after"])
    out = row.text.format(subject=reason["subject"], pid=reason["pid"], **fields)
    return out + COARSE_SUFFIX if detail.get("coarse") else out


def clean_text(reason):
    """The reason's text, safe to show (see `clean`)."""
    return host_text.clean(text(reason))


def clean(reason):
    """A copy safe to show: any user names processes (see host_text), so every string in it is made plain."""
    return {"class": reason["class"], "subject": host_text.clean(reason["subject"]), "pid": reason["pid"],
            "detail": dict((k, _clean_value(v)) for k, v in reason["detail"].items())}


def _clean_value(value):
    if isinstance(value, dict) and "class" in value:
        return clean(value)
    if isinstance(value, str):
        return host_text.clean(value)
    return value


def timeline_key(reason):
    """(class, subject) the why-awake record files this reason under."""
    row = BY_ID[reason["class"]]
    if row.timeline is None:
        return timeline_key(reason["detail"]["after"])
    return row.timeline, reason["subject"] if row.timeline != OTHER else ""


def timeline_detail(reason):
    """The detail the why-awake record files with this reason's span: its row's `recorded` keys, as sorted
    (key, value) pairs (hashable: spans with other details are other spans), () for none. A connection that came
    in keeps our port and the client's address, not the client's port: each connection of the same client comes
    from a new port, and one service's work is one span."""
    row = BY_ID[reason["class"]]
    if row.timeline is None:
        return timeline_detail(reason["detail"]["after"])
    detail = reason["detail"]
    kept = [(k, detail[k]) for k in row.recorded if k in detail]
    if "local_port" in detail:
        kept = [(k, v) for k, v in kept if k != "port"]
    return tuple(sorted(kept))


def from_saved(value):
    """A reason kept in a hand-off state: raises ValueError unless it is one this agent could have made. A text
    (an older agent kept its reasons so) reads as "restored"."""
    if isinstance(value, str):
        return make(RESTORED)
    if not isinstance(value, dict) or value.get("class") not in BY_ID:
        raise ValueError("bad reason %r" % (value,))
    subject, pid, detail = value.get("subject", ""), value.get("pid"), value.get("detail") or {}
    if not isinstance(subject, str) or not isinstance(detail, dict) or (
            pid is not None and (isinstance(pid, bool) or not isinstance(pid, int))):
        raise ValueError("bad reason %r" % (value,))
    if "after" in detail:
        detail = dict(detail, after=from_saved(detail["after"]))
    reason = make(value["class"], subject, pid, **detail)
    try:
        text(reason)
    except (KeyError, ValueError, IndexError):
        raise ValueError("bad reason %r" % (value,)) from None
    return reason
