"""The agent's one selector loop: a non-blocking listener (accepted through the gate, wr_agent/accept_gate.py), a
waker (wr_agent/waker.py) and the clients, each on one selector. The Unix-socket server (wr_agent/server.py) and
the health endpoint (wr_agent/health.py) are its two uses: each says how it accepts and serves a client."""

import selectors

from wr_agent.accept_gate import AcceptGate
from wr_agent.waker import WAKE, Waker

LISTEN = "listen"  # the selector key's data for the listener


class SelectLoop(object):
    """`clients` in accept order (the first is the oldest); a subclass gives `_accept()` (its sockets from
    `self._gate.accept()`, each registered with `_add`) and `_service(client, mask)`."""

    def __init__(self, listen, clock, what):
        self.listen = listen
        self.clock = clock
        self.sel = selectors.DefaultSelector()
        self._gate = AcceptGate(self.sel, listen, LISTEN, clock, what)
        self._waker = Waker(self.sel)
        self.clients = {}

    def wake(self):
        """End a `select_once` early (from another thread, or a signal handler)."""
        self._waker.wake()

    def select_once(self, timeout):
        """Wait for the listener, the waker or a client until `timeout` (None: no limit; earlier when the gate
        is to watch the listener again), and handle what is ready."""
        resume_at = self._gate.resume_if_due()
        if resume_at is not None:
            until_resume = max(0.0, resume_at - self.clock())
            timeout = until_resume if timeout is None else min(timeout, until_resume)
        for key, mask in self.sel.select(timeout):
            if key.data == LISTEN:
                self._accept()
            elif key.data == WAKE:
                self._waker.drain()
            else:
                self._service(key.data, mask)

    def _add(self, c):
        self.clients[c] = True
        self.sel.register(c.sock, selectors.EVENT_READ, c)

    def _drop(self, c):
        if self.clients.pop(c, None) is not None:
            try:
                self.sel.unregister(c.sock)
            except (KeyError, ValueError):
                pass
        c.sock.close()

    def close(self):
        """Drop every client and close the selector (the listening socket stays open: its owner closes it)."""
        for c in list(self.clients):
            self._drop(c)
        self._waker.close()
        self.sel.close()

    def _accept(self):
        raise NotImplementedError

    def _service(self, c, mask):
        raise NotImplementedError
