"""A wake-up for a selector loop: another thread (or a signal handler) ends a `select()` early.

Both the Unix-socket server and the health endpoint sleep in `select()` with no idle timeout, so a stop,
a finished tick or a hand-off must be able to interrupt them; one socketpair registered on the loop's
selector does it. Writes never block: a full buffer already means "wake up".
"""

import selectors
import socket

WAKE = "wake"  # the selector key's data for the wake-up socket


class Waker(object):
    def __init__(self, sel):
        self._r, self._w = socket.socketpair()
        self._r.setblocking(False)
        self._w.setblocking(False)
        self._sel = sel
        sel.register(self._r, selectors.EVENT_READ, WAKE)

    def wake(self):
        try:
            self._w.send(b"x")
        except OSError:
            pass  # already woken (buffer full) or closing

    def drain(self):
        """Empty the pipe; call when the selector reports the WAKE key."""
        try:
            while self._r.recv(4096):
                pass
        except OSError:
            pass

    def close(self):
        try:
            self._sel.unregister(self._r)
        except (KeyError, ValueError, RuntimeError):
            pass  # the selector was closed first
        self._r.close()
        self._w.close()
