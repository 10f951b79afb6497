"""Accepting on a non-blocking listener watched by a selector, without spinning when out of descriptors.

When the process (or the system) has no file descriptor left, `accept()` fails while the pending connection
stays queued, so the listener stays readable: a loop that just returns would wake at once, forever, burning
a core and filling the log. The gate stops watching the listener for a short pause instead, says so once per
episode, and watches it again when the pause is over (the owner's loop asks `resume_if_due`).
"""

import errno
import selectors

from wr_agent.agent_log import log

PAUSE_SECONDS = 0.2
BATCH = 16  # connections taken per readiness, so one busy listener cannot starve the clients
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class AcceptGate(object):
    def __init__(self, sel, listen, data, clock, what):
        self.sel = sel
        self.listen = listen
        self.data = data
        self.clock = clock
        self.what = what
        self.paused_until = None
        self._said = False
        listen.setblocking(False)
        sel.register(listen, selectors.EVENT_READ, data)

    def accept(self):
        """Up to BATCH new non-blocking sockets; on running out of descriptors, pause watching the listener.

        While descriptors come and go (an accept succeeds, the next fails) it is one episode: said once, and
        "accepting again" only when a round takes connections without failing."""
        taken = []
        short = False
        for _ in range(BATCH):
            try:
                sock, _ = self.listen.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                if exc.errno in OUT_OF_DESCRIPTORS:
                    short = True
                    self._pause(exc)
                break  # ECONNABORTED and the like: that client is gone
            sock.setblocking(False)
            taken.append(sock)
        if taken and self._said and not short:
            self._said = False
            log.info("%s: accepting connections again", self.what)
        return taken

    def resume_if_due(self):
        """Watch the listener again once the pause is over; returns when to call again (None: not paused)."""
        if self.paused_until is None:
            return None
        if self.clock() < self.paused_until:
            return self.paused_until
        self.paused_until = None
        self.sel.register(self.listen, selectors.EVENT_READ, self.data)
        return None

    def close(self):
        if self.paused_until is None:
            try:
                self.sel.unregister(self.listen)
            except (KeyError, ValueError):
                pass
        self.paused_until = None

    def _pause(self, exc):
        if not self._said:
            self._said = True
            log.warning("%s: cannot accept a connection (%s); trying again every %.1f s",
                        self.what, exc.strerror, PAUSE_SECONDS)
        self.sel.unregister(self.listen)
        self.paused_until = self.clock() + PAUSE_SECONDS
