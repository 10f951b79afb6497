"""Each host's agent key (what the agent proves who it is with: remote/agent_proof.py), in the system keyring and
nowhere else on this computer (credentials.py).

A key is filed under the host's name and its binding (`binding_of`): the host as configured (any edit but its
hourly price, which the session goes on through, changes it) and the login its connection resolved to (user,
address and port after ~/.ssh/config, and the host key). So a key learnt from the agent of one login is never
asked of an agent reached as another (a host removed and added again as another user, an edit of its address,
a config that now names another user, a rebuilt machine): that agent has no key the app knows, and the connect
goes the install probe's way, which asks the login's own agent for its key.

Read once per run and kept in memory. With no usable keyring (none installed, locked, failing, or its unlock
dialog cancelled) a key is kept in memory for this run only, and that is logged once: the keyring is not asked
again in this run (one Cancel holds: its dialog does not come back at the next host's connect), and the key is
never written anywhere else, so each run's first connect to a host then goes the install probe's way. Blocking
(the keyring may wait on D-Bus): off the loop.

`this_run_only`: the keyring is neither read nor written for a key (a key learnt is kept in memory for the run),
only a key forgotten is deleted there. A `workroom` command run without the app is one connect: the probe's
answer gives it the key, and starting the keyring would cost it more than the probe's way does (docs/cli.md,
start-up).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from concurrent.futures import Future, wait

from workroom.core.hosts import Host
from workroom.credentials import CredentialError, CredentialKey, CredentialStore
from workroom.daemon_threads import DaemonThreads
from workroom.remote.agent_proof import is_key

log = logging.getLogger(__name__)

BINDING_HEX = 32
FORGET_WAIT_SECONDS = 5.0
SETTLE_WAIT_SECONDS = 3.0
"""How long a closing engine waits for the keyring's writes still on their way (`settle`): a run that ends right
after its first connect (a command, a quick quit) would otherwise end them with it, and the next run, finding no
key, goes the probe's way instead of the agent's remembered socket. A dialog left open is not waited out."""


UNBOUND_FIELDS = frozenset({"hourly_price"})
"""What a host's record holds that says nothing of where or as whom it is reached (an edit of it alone keeps the
session, and the agent it reached, going)."""


def binding_of(host: Host, login: str) -> str:
    """What a remembered agent (its place, its key) is bound to: the host's record (but `UNBOUND_FIELDS`) and the
    login its connection resolved to, hashed (no secret in it; 32 hex digits)."""
    record = host.model_dump(mode="json", exclude=set(UNBOUND_FIELDS))
    text = json.dumps({"host": record, "login": login}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:BINDING_HEX]


class AgentKeys:
    """The agents' keys by (host name, binding): the keyring's, read once, kept in memory for the run."""

    def __init__(self, store: CredentialStore | None, *, this_run_only: bool = False) -> None:
        self._store = store
        self.this_run_only = this_run_only
        self._known: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()
        self._asking = threading.Lock()
        """Held across each keyring call of ours: one at a time, so a call queued behind an unlock dialog (a write of
        a key the probe gave while it was up) sees how the dialog ended and, cancelled, does not put it up again."""
        self._keyring_failed = False
        self._writer: DaemonThreads | None = None  # the keyring's writes, in order, off the connect's way

    def get(self, name: str, binding: str) -> str | None:
        """The key held for the agent (blocking: the keyring is asked the first time, without holding the others
        up: a key kept meanwhile, from the probe's answer, wins over what the keyring says later)."""
        with self._lock:
            if (name, binding) in self._known or self.this_run_only:
                return self._known.get((name, binding))
        stored = self._keyring("get", name, binding)
        with self._lock:
            if (name, binding) not in self._known:
                self._known[(name, binding)] = stored if is_key(stored) else None
            return self._known[(name, binding)]

    def keep(self, name: str, binding: str, key: str) -> Future[None] | None:
        """Remember `key` (from the install probe's answer) for the agent of `name` bound to `binding`: in memory at
        once, in the keyring on a thread of its own, so a connect never waits on the keyring (its unlock dialog
        may stay open for as long as the person leaves it). The write's future, or None when there is none."""
        if not is_key(key):
            raise ValueError("an agent's key is 64 hex digits")
        with self._lock:
            if self._known.get((name, binding)) == key:
                return None
            self._known[(name, binding)] = key
            if self.this_run_only or self._store is None or self._keyring_failed:
                return None
            if self._writer is None:
                self._writer = DaemonThreads("wr-keyring")
            return self._writer.submit(self._write, name, binding, key)

    def _write(self, name: str, binding: str, key: str) -> None:
        self._keyring("set", name, binding, key)

    def settle(self, timeout: float = SETTLE_WAIT_SECONDS) -> bool:
        """Wait (blocking, `timeout` at most) for every keyring write submitted so far; whether they all landed."""
        with self._lock:
            writer = self._writer
        if writer is None:
            return True
        done, _ = wait([writer.submit(lambda: None)], timeout=timeout)
        return bool(done)

    def may_hold(self, name: str, binding: str) -> bool:
        """Whether `get` may give a key (non-blocking): one is in memory, or the keyring, not read yet, may
        have one. False: an agent at a remembered socket could not prove who it is with any key held here."""
        with self._lock:
            if (name, binding) in self._known:
                return self._known[(name, binding)] is not None
            return self._store is not None and not self.this_run_only

    def forget(self, name: str, binding: str) -> None:
        """Forget the key here and in the keyring (blocking): the keyring's delete goes after any write of it still
        on its way there, and is waited for FORGET_WAIT_SECONDS at most (a dialog left open: it lands later, in
        order, and nothing here waits on it)."""
        with self._lock:
            self._known.pop((name, binding), None)
            writer = self._writer
        if writer is None:
            with self._lock:
                self._keyring("delete", name, binding)
            return
        wait([writer.submit(self._keyring, "delete", name, binding)], timeout=FORGET_WAIT_SECONDS)

    def _keyring(self, action: str, name: str, binding: str, *secret: str) -> str | None:
        with self._asking:
            return self._keyring_now(action, name, binding, *secret)

    def _keyring_now(self, action: str, name: str, binding: str, *secret: str) -> str | None:
        if self._store is None or self._keyring_failed:
            return None
        key = CredentialKey.agent_key(name, binding)
        try:
            if action == "get":
                return self._store.get(key)
            if action == "set":
                self._store.set(key, *secret)
            else:
                self._store.delete(key)
        except Exception as error:  # a keyring backend fails in ways of its own: the keys are this run's alone then
            self._keyring_failed = True
            why = f"{error.title}: {error.message}" if isinstance(error, CredentialError) else repr(error)
            log.info("the agents' keys are kept in memory for this run only (%s), and the keyring is not asked for "
                     "them again in this run; each run's first connect to a host asks its agent for its key again",
                     why)
        return None
