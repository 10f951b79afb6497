"""One process as the sampler follows it (`Proc`), and reading what its /proc files say: its stat line
(`parse_stat`), the kind of sleep its wchan names (`kind`), and where a timer sleeper that ran now is (`held`)."""

from wr_agent import exclusions


class Proc(object):
    """What the sampler knows of one process between ticks (ProcSampler)."""


    __slots__ = (
        "armed",
        "block_from",
        "born",
        "children",
        "comm",
        "endless",
        "excluded",
        "fds",
        "last",
        "looked_from",
        "paced",
        "pid",
        "ppid",
        "quick",
        "ran_at",
        "reaper",
        "runtime",
        "sched",
        "shared",
        "slices",
        "start",
        "state",
        "threads",
        "ticks",
        "timer",
        "tree",
        "tty",
        "unsure",
        "wakes",
        "wchar",
        "where",
        "window",
        "wrote",
    )

    def __init__(self, pid, comm, ppid):
        self.pid, self.comm, self.ppid = pid, comm, ppid
        self.excluded = self.tree = False
        self.fds = {}
        self.runtime = self.ticks = None
        self.slices = None  # times it was put on a CPU (schedstat's third field): a wake moves it
        self.sched = None  # the schedstat bytes `runtime` was read from: the same bytes, the process did not run
        self.quick = None  # the held schedstat fd while comparing those bytes is all a tick needs (`_quick`)
        self.children = 0  # cutime + cstime: CPU of reaped children, in clock ticks
        self.threads = 1
        self.state = "?"
        self.timer = None  # wchan kind while sleeping: "timer", "fifo", "lock" or None
        self.tty = None  # the pty (or tty) path its stdout/stderr writes to
        self.wchar = None
        self.last = 0.0
        self.start = None
        self.born = None  # monotonic time the process started
        self.ran_at = None  # monotonic time it was last seen to run (a timer sleep's start, at the latest)
        self.endless = False  # `sleep infinity`: a timer sleep that no job step follows
        self.wakes = 0  # timer sleeps seen to end: a process that sleeps again and again is ticking
        self.unsure = False  # a timer sleeper seen to run and not yet blocked again: a wake or a restart, next look
        # A wait with a timeout that wakes and goes back to it (IDLE_WAKE_CPU): when the wait began (None: at
        # ran_at), the block a job step's look was last made for, and the wchan it was blocked in at the last look.
        self.block_from = self.looked_from = self.where = None
        # A step its parent waits for that paces itself with timer sleeps (`_waking_steps`): its wchar at its last
        # wake (None: not such a step), and whether that wake wrote output.
        self.paced = None
        self.wrote = False
        self.window = None  # [(monotonic, cpu seconds)] with CPU in the last CPU_WINDOW seconds
        # A non-candidate whose reaped children are candidates (PID 1; a process of another user under
        # `--candidates user` once a child of it is a candidate): [reaped CPU in clock ticks at the last look (None:
        # not read yet), ticks of known children gone since]; [] another user's, no candidate child seen yet
        self.reaper = None
        # Another user's reaper (`reaper` was []): its reaped time is the user's only while a candidate child of it
        # was seen lately (monotonic time of the last listing that saw one); others' orphans are not the user's work
        self.shared = False
        self.armed = None


def parse_stat(raw):
    """(comm, fields after the comm) from a /proc/PID/stat line (comm may hold spaces and parens)."""
    text = raw.decode("utf-8", "replace")
    lo, hi = text.find("("), text.rfind(")")
    return text[lo + 1:hi], text[hi + 2:].split()


def kind(wchan):
    """A wchan's kind of sleep: "timer", "fifo", "lock" or None."""
    if wchan in exclusions.TIMER_WCHANS:
        return "timer"
    if wchan in exclusions.FIFO_WCHANS:
        return "fifo"
    if wchan in exclusions.LOCK_WCHANS:
        return "lock"
    return None


def held(wchan):
    """Where a timer sleeper that ran is now, by its wchan: "held" (the freezer's trap, or its sleep restarted),
    "runnable" (on or waiting for a CPU: wchan 0), or None (blocked anywhere else, or unreadable: a wake)."""
    if wchan in exclusions.FROZEN_WCHANS or wchan in exclusions.RESTART_WCHANS:
        return "held"
    return "runnable" if wchan in ("", "0") else None
