"""What a sampler saw in one tick; the classifier turns it into a vote."""


class Signals(object):
    """Raw per-tick observations. Lists hold (comm, pid) or (comm, pid, share) tuples."""

    __slots__ = (
        "candidates",
        "coarse",
        "cpu",
        "dstate",
        "fifo_wait",
        "keystroke_age",
        "lock_wait",
        "net_bytes",
        "paced",
        "tcp",
        "timer_sleep",
        "tty_bytes",
        "unix",
    )

    def __init__(self, cpu=(), dstate=(), timer_sleep=(), tcp=(), tty_bytes=0, keystroke_age=None,
                 net_bytes=0, coarse=False, candidates=0, fifo_wait=(), unix=(), lock_wait=(),
                 paced=()):
        self.cpu = list(cpu)  # (comm, pid, share of a core) at or over the threshold
        self.dstate = list(dstate)
        # (comm, pid, seconds since it last ran, timer sleeps it was seen to wake from) in a timer sleep
        self.timer_sleep = list(timer_sleep)
        self.fifo_wait = list(fifo_wait)  # (comm, pid) blocked opening a FIFO for its partner
        self.lock_wait = list(lock_wait)  # (comm, pid) blocked for WAIT_MIN or more asking for a file lock
        # (comm, pid): a job step pacing itself with timer sleeps whose last wake wrote its output (proc_sampler)
        self.paced = list(paced)
        # (comm, pid) owning a connection that is work, or (comm, pid, facts): facts of that connection that stay
        # put while it waits ({"peer", "port", "since"}: reasons.py keeps only those, see the tcp row there)
        self.tcp = list(tcp)
        # (comm, pid, facts): a job step waiting on a local server over a Unix stream socket (job_wait); facts
        # {"path": the server's socket address, "since": when the wait began}
        self.unix = list(unix)
        self.tty_bytes = tty_bytes  # output bytes since the last tick on ptys someone could be watching
        self.keystroke_age = keystroke_age  # seconds since the last keystroke on any pty, or None
        self.net_bytes = net_bytes  # rx+tx on box-crossing interfaces since the last tick
        self.coarse = coarse
        self.candidates = candidates
