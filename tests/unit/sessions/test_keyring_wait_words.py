"""A connect waiting on the system keyring is said on every face: the store tells the engine when a call has waited
(credentials.WAIT_SAID_SECONDS), the engine tells every session on its way to connecting (and one that starts
while the keyring still waits), each row's connection words say it, and the state past waiting carries none.
Real engine and sessions in a temporary home; the keyring is the in-memory one, its get held as a dialog holds
it; no host is contacted."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from fixtures.memory_keyring import DialogKeyring
from workroom import credentials
from workroom.agent_bundle import load_agent_bundle
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host
from workroom.credentials import CredentialKey, CredentialStore
from workroom.paths import HOME_ENV, app_paths
from workroom.sessions.engine import Engine
from workroom.ui import row_text

pytestmark = pytest.mark.unit


def test_every_connect_on_its_way_says_it_waits_for_the_keyring(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credentials, "WAIT_SAID_SECONDS", 0.2)
    paths = app_paths({HOME_ENV: str(tmp_path / "home")}).ensure()
    backend = DialogKeyring()
    engine = Engine(paths, load_agent_bundle(paths), hostname="me", auto_reconnect=False,
                    credentials=CredentialStore(backend=backend))
    for name in ("box1", "box2", "box3"):
        engine.add_host(Host(name=name, provider="ssh", address=f"{name}.example"))

    async def scenario() -> None:
        one, two, live = engine.session("box1"), engine.session("box2"), engine.session("box3")
        one._set_state(ConnectionState.CONNECTING)
        live._set_state(ConnectionState.LIVE)
        asking = threading.Thread(target=engine.credentials.get, args=(CredentialKey.passphrase("/k"),))
        asking.start()
        deadline = time.monotonic() + 5
        while one.connection.waiting_for is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert one.connection.waiting_for == "the keyring"
        words = row_text.connection_text(one.snapshot(), time.monotonic())
        assert words == "Connecting… · waiting for the keyring (a system dialog may be open)", words
        assert live.connection.waiting_for is None  # live: not waiting on anything
        two._set_state(ConnectionState.PUSHING)  # began while the keyring still waits: behind it too
        await asyncio.sleep(0.05)
        assert two.connection.waiting_for == "the keyring"
        backend.closed.set()
        await asyncio.get_running_loop().run_in_executor(None, asking.join, 5)
        await asyncio.sleep(0.05)
        assert one.connection.waiting_for is None and two.connection.waiting_for is None
        one._set_state(ConnectionState.LIVE)
        assert "waiting" not in row_text.connection_text(one.snapshot(), time.monotonic())

    try:
        asyncio.run(scenario())
    finally:
        asyncio.run(engine.close())
