"""Per-tick BUSY vote, 30 s hold, resume mask after a tick gap (docs/agent.md, "The classifier").

Pure: it sees only Signals, the monotonic time and (for gaps) a clock that counts suspend, both given, so
it is unit-tested on fake clocks.
"""

import collections

from wr_agent import reasons as R

TTY_BYTES_PER_S, TTY_WINDOW = 200.0, 5.0
KEYSTROKE_WINDOW = 10.0
NET_BYTES_PER_S, NET_WINDOW = 500.0, 3.0
# The network signal counts a flow, not a burst: every tick of the window moved at least this share of the rate.
# A poll's answer through a tunnel, however big, moves in one or two ticks.
NET_TICK_SHARE = 0.25
GAP_SECONDS = 30.0
MASK_SECONDS = 3.0
REASONS_MAX = 8
# A timer sleep is a job step (`sleep 600 && make`, each `sleep 5` a shell loop execs) once it has lasted this
# long and is the sleeping process's first: a daemon's heartbeat (`time.sleep(1)`, `watch -n 1`) wakes sooner,
# and one that sleeps longer (`time.sleep(10)` between checks) is seen to wake and sleep again.
TIMER_MIN_SLEEP = 3.0


class Classifier(object):
    NOT_HANDED_OFF = (
        "hold_seconds", "tick_seconds", "gap_clock",  # the new process's own, from its command line
        "_gap_mark", "last_tick",  # its first tick starts them again: a hand-off is no gap
        "reasons",  # made again from what is carried: a hold after the last busy reasons
        "mask_until", "_tty", "_net",  # seconds-long windows: they fill again
        "operations",  # the old process's operations in flight
        "last_gap",  # the old process's last gap: not told after a hand-off
    )
    """Attributes a hand-off does not carry (`to_state` carries the rest); tests/unit/agent/
    test_agent_handoff_state.py fails on an attribute neither carried nor named here."""

    def __init__(self, hold_seconds=30.0, tick_seconds=1.0, gap_clock=None):
        """`gap_clock`: the clock tick gaps are measured on, one that counts suspend (clocks.suspend_aware):
        CLOCK_MONOTONIC stops while a guest is suspended, so a box that slept an hour shows no gap on it.
        None: the `now` given to step (tests that move one fake clock)."""
        self.hold_seconds = hold_seconds
        self.gap_clock = gap_clock
        self._gap_mark = None  # gap_clock at the last tick
        self.tick_seconds = tick_seconds
        self.last_tick = None
        self.last_busy = None  # monotonic time of the last BUSY vote
        self.last_busy_reasons = []
        self.mask_until = None
        self.busy = False
        self.reasons = []
        self.operations = 0  # agent-run operations in flight (a BUSY signal)
        self.last_gap = None  # (monotonic at the wake, seconds without a tick, BUSY before it)
        self._tty = collections.deque()
        self._net = collections.deque()

    @staticmethod
    def _rate(window, now, span, value):
        window.append((now, value))
        while window and window[0][0] <= now - span:
            window.popleft()
        return sum(v for _, v in window) / span

    def _flowing(self, now):
        """Bytes moved on every tick of the network window (NET_TICK_SHARE of the rate each): a flow, not a burst."""
        floor = NET_BYTES_PER_S * self.tick_seconds * NET_TICK_SHARE
        window = self._net
        return (len(window) >= 2 and now - window[0][0] >= NET_WINDOW - 1.5 * self.tick_seconds
                and all(v >= floor for _, v in window))

    def step(self, now, sig):
        """Feed one tick's signals; return (busy, reasons), each reason one of `reasons.ROWS` (data, see there)."""
        mark = now if self.gap_clock is None else self.gap_clock()
        if self.last_tick is not None and mark - self._gap_mark >= GAP_SECONDS:
            # Remembered for the status (`last_gap`): the app uses it to say a box slept while busy.
            self.last_gap = (now, mark - self._gap_mark, self.busy)
            # The box slept: CPU and network right after a wake are the wake itself, not work.
            self.mask_until = now + MASK_SECONDS + self.tick_seconds
            self._tty.clear()
            self._net.clear()
        self.last_tick, self._gap_mark = now, mark
        masked = self.mask_until is not None and now < self.mask_until
        coarse = bool(sig.coarse)
        reasons = []
        if not masked:
            for comm, pid, _share in sorted(sig.cpu, key=lambda c: -c[2]):
                reasons.append(R.make(R.CPU, comm, pid, coarse=coarse))
            for comm, pid in sig.dstate:
                reasons.append(R.make(R.DISK, comm, pid, coarse=coarse))
        for t in sig.timer_sleep:
            if (len(t) < 3 or t[2] >= TIMER_MIN_SLEEP) and (len(t) < 4 or t[3] == 0):
                reasons.append(R.make(R.SLEEP, t[0], t[1]))
        for comm, pid in sig.paced:
            reasons.append(R.make(R.SLEEP, comm, pid))
        for comm, pid in sig.fifo_wait:
            reasons.append(R.make(R.FIFO, comm, pid))
        for comm, pid in sig.lock_wait:
            reasons.append(R.make(R.LOCK, comm, pid))
        for t in sig.tcp:
            # (comm, pid, facts) from the TCP judge (tcp_rule.facts): which peer, since when; a bare (comm, pid)
            # names the process only
            facts = t[2] if len(t) > 2 and isinstance(t[2], dict) else {}
            reasons.append(R.make(R.TCP, t[0], t[1], **facts))
        for comm, pid, facts in sig.unix:
            reasons.append(R.make(R.UNIX, comm, pid, **facts))
        tty_rate = self._rate(self._tty, now, TTY_WINDOW, sig.tty_bytes)
        if tty_rate >= TTY_BYTES_PER_S:
            # No rate in the reason: a reason that changes every tick would push an event every tick,
            # and over SSH that traffic would itself keep a network-metered box busy.
            reasons.append(R.make(R.TTY_OUTPUT))
        if sig.keystroke_age is not None and sig.keystroke_age <= KEYSTROKE_WINDOW:
            reasons.append(R.make(R.KEYSTROKE))
        net_rate = self._rate(self._net, now, NET_WINDOW, 0 if masked else sig.net_bytes)
        if net_rate >= NET_BYTES_PER_S and self._flowing(now):
            reasons.append(R.make(R.NET))
        if self.operations > 0:
            reasons.append(R.make(R.OPERATION))
        if len(reasons) > REASONS_MAX:
            reasons = [*reasons[:REASONS_MAX], R.make(R.MORE, count=len(reasons) - REASONS_MAX)]
        if reasons:
            self.last_busy, self.last_busy_reasons = now, reasons
            self.busy, self.reasons = True, reasons
        elif self.last_busy is not None and now - self.last_busy < self.hold_seconds - self.tick_seconds / 2:
            # (half a tick of slack: ticks jitter by a hair, and a 30 s hold must not become 31 s)
            self.busy, self.reasons = True, [R.make(R.HOLD, after=self.last_busy_reasons[0])]
        elif masked and self.busy:
            # Keep the verdict through the mask: a wake is not evidence of idleness (and an IDLE here
            # would reset an unanswered ceiling).
            self.reasons = [R.make(R.RESUME)]
        else:
            self.busy, self.reasons = False, []
        return self.busy, self.reasons

    def hold_until(self):
        if not self.busy or self.last_busy is None:
            return None
        return self.last_busy + self.hold_seconds

    def to_state(self):
        return {"last_busy": self.last_busy, "last_busy_reasons": self.last_busy_reasons,
                "busy": self.busy}

    def restore(self, d):
        lb = d.get("last_busy")
        if lb is not None and (isinstance(lb, bool) or not isinstance(lb, (int, float))):
            raise ValueError("bad last_busy")
        saved = d.get("last_busy_reasons") or []
        if not isinstance(saved, list):
            raise ValueError("bad last_busy_reasons")
        # An older agent kept its reasons as text: they read as "restored" (the hold names them for at most 30 s).
        reasons = [R.from_saved(r) for r in saved[:REASONS_MAX]]
        self.last_busy, self.last_busy_reasons = lb, reasons or [R.make(R.RESTORED)]
        self.busy = bool(d.get("busy"))
        self.reasons = [R.make(R.HOLD, after=self.last_busy_reasons[0])] if self.busy else []
