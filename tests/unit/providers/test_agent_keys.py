"""The agents' keys held for a run (providers/agent_keys.py): from the keyring for the app; for the run alone for
a command run without the app, which neither reads nor writes the keyring for them but still deletes a key it
forgets. The keyring is the tests' in-memory backend."""

from __future__ import annotations

import pytest
from workroom.credentials import SERVICE_NAME, CredentialKey, CredentialStore
from workroom.providers.agent_keys import AgentKeys

pytestmark = pytest.mark.unit

KEY, OTHER = "a" * 64, "b" * 64


def stored(keyring, binding: str) -> str | None:  # type: ignore[no-untyped-def]
    return keyring._store.get((SERVICE_NAME, CredentialKey.agent_key("box1", binding).username))


def test_the_apps_keys_come_from_the_keyring_and_go_back_to_it(memory_keyring) -> None:  # type: ignore[no-untyped-def]
    CredentialStore().set(CredentialKey.agent_key("box1", "b1"), KEY)
    keys = AgentKeys(CredentialStore())
    assert keys.may_hold("box1", "b1") and keys.may_hold("box1", "b2")  # the keyring is not read yet
    assert keys.get("box1", "b1") == KEY
    assert keys.get("box1", "b2") is None and not keys.may_hold("box1", "b2")  # read: none there
    written = keys.keep("box1", "b2", OTHER)
    assert written is not None
    written.result(timeout=10)
    assert stored(memory_keyring, "b2") == OTHER and keys.may_hold("box1", "b2")


def test_a_run_of_its_own_leaves_the_keyring_alone_but_for_a_key_it_forgets(memory_keyring) -> None:  # type: ignore[no-untyped-def]
    CredentialStore().set(CredentialKey.agent_key("box1", "b1"), KEY)
    keys = AgentKeys(CredentialStore(), this_run_only=True)
    assert not keys.may_hold("box1", "b1")  # no knock at a remembered socket: no key here could prove it
    assert keys.get("box1", "b1") is None
    keys.keep("box1", "b1", OTHER)  # the probe's answer
    assert keys.get("box1", "b1") == OTHER and keys.may_hold("box1", "b1")
    assert stored(memory_keyring, "b1") == KEY  # not written over
    keys.forget("box1", "b1")
    assert stored(memory_keyring, "b1") is None and keys.get("box1", "b1") is None


def test_one_cancel_holds_for_the_run_and_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    """The keyring's unlock dialog cancelled (its backend raises): the key is this run's alone, the keyring is not
    asked again in this run for any host (its dialog came back at the next host's connect), and that is said once."""
    import logging

    from workroom.credentials import CredentialError

    class Cancelled:
        asked = 0

        def get(self, key):  # type: ignore[no-untyped-def]
            Cancelled.asked += 1
            raise CredentialError("Keyring locked", "The prompt was dismissed.", "Unlock it.")

        set = delete = get

    keys = AgentKeys(Cancelled())  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        assert keys.get("box1", "b1") is None
        keys.keep("box2", "b2", KEY)
        assert keys.get("box2", "b2") == KEY  # from memory
        assert keys.get("box3", "b3") is None
        keys.forget("box2", "b2")
    assert Cancelled.asked == 1
    assert sum("kept in memory for this run only" in r.getMessage() for r in caplog.records) == 1


def test_a_key_kept_never_waits_on_the_keyring() -> None:
    """The keyring's unlock dialog left open (its backend blocks): keeping a key returns at once and the key is
    there in memory for the connect; the keyring's write goes on on its own thread and lands when it answers."""
    import threading
    import time

    answered = threading.Event()
    written_to: dict[str, str] = {}

    class Waiting:
        def set(self, key, secret):  # type: ignore[no-untyped-def]
            answered.wait(10)
            written_to[key.username] = secret

    keys = AgentKeys(Waiting())  # type: ignore[arg-type]
    t0 = time.monotonic()
    written = keys.keep("box1", "b1", KEY)
    assert time.monotonic() - t0 < 1.0 and keys.get("box1", "b1") == KEY and written_to == {}
    answered.set()
    assert written is not None
    written.result(timeout=10)
    assert list(written_to.values()) == [KEY]


def test_a_closing_run_waits_for_its_keys_to_land_but_not_for_ever() -> None:
    """A run that ends right after its first connect (a command, a quick quit) ended the keyring's write with it
    on a loaded machine, and the next run, finding no key, went the probe's way instead of the agent's socket:
    `settle` (the engine's close) waits for the writes on their way, and gives up on a keyring that hangs."""
    import threading
    import time

    class Slow:
        def __init__(self, delay: float, gate: threading.Event | None = None) -> None:
            self.values: dict[str, str] = {}
            self.delay, self.gate = delay, gate

        def get(self, key):  # type: ignore[no-untyped-def]
            return self.values.get(key.username)

        def set(self, key, value):  # type: ignore[no-untyped-def]
            if self.gate is not None:
                self.gate.wait(30)
            time.sleep(self.delay)
            self.values[key.username] = value

        def delete(self, key):  # type: ignore[no-untyped-def]
            self.values.pop(key.username, None)

    store = Slow(0.3)
    keys = AgentKeys(store)  # type: ignore[arg-type]
    keys.keep("box1", "b1", KEY)
    assert AgentKeys(store).get("box1", "b1") is None  # type: ignore[arg-type]  # the next run, too soon: no key
    assert keys.settle(timeout=10)
    assert AgentKeys(store).get("box1", "b1") == KEY  # type: ignore[arg-type]

    gate = threading.Event()  # a keyring whose dialog nobody answers
    hung = AgentKeys(Slow(0.0, gate))  # type: ignore[arg-type]
    hung.keep("box1", "b1", KEY)
    started = time.monotonic()
    assert hung.settle(timeout=0.5) is False
    assert time.monotonic() - started < 5
    gate.set()
    assert AgentKeys(store).settle() is True  # nothing written: nothing to wait for  # type: ignore[arg-type]


def test_one_cancelled_unlock_holds_even_for_a_write_queued_behind_its_dialog(caplog) -> None:  # type: ignore[no-untyped-def]
    """A locked keyring whose unlock dialog the person cancels: a connect's read puts it up; the probe gives the key
    meanwhile and its write queues behind the dialog. After the Cancel neither that write nor another host's read
    puts the dialog up again, and the log says once that the keys are this run's."""
    import threading
    import time

    from fixtures.memory_keyring import MemoryKeyring
    from keyring.errors import KeyringLocked

    class CancelledUnlock(MemoryKeyring):
        def __init__(self) -> None:
            super().__init__()
            self.dialogs = 0
            self.cancel = threading.Event()

        def _ask(self) -> None:
            self.dialogs += 1
            self.cancel.wait(10)
            raise KeyringLocked("Failed to unlock the collection!")

        def get_password(self, service: str, username: str) -> str | None:
            self._ask()
            return None

        def set_password(self, service: str, username: str, password: str) -> None:
            self._ask()

    caplog.set_level("INFO", logger="workroom.providers.agent_keys")
    backend = CancelledUnlock()
    keys = AgentKeys(CredentialStore(backend=backend))
    reading = threading.Thread(target=keys.get, args=("box1", "b1"))
    reading.start()
    deadline = time.monotonic() + 5
    while backend.dialogs == 0:
        assert time.monotonic() < deadline, "the read never reached the keyring"
        time.sleep(0.01)
    written = keys.keep("box1", "b1", "a" * 64)  # the probe's key, while the dialog is up
    assert written is not None
    backend.cancel.set()
    reading.join(5)
    written.result(5)
    assert keys.get("box2", "b2") is None
    assert keys.get("box1", "b1") == "a" * 64  # in memory for the run
    assert backend.dialogs == 1
    assert caplog.text.count("kept in memory for this run only") == 1
