"""A first connect to a host with no agent yet logs nothing that reads as a failure: the relay the session opens
while the install probe runs finds no bundle, and that is expected, not "Command failed on the host". Real sshd,
real agent pushed by the app's engine."""

from __future__ import annotations

import asyncio
import logging

import pytest
from engine_helpers import ssh_host, trust_sshd
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration


def test_a_first_connect_logs_no_failure(sshd, app_home, agent_bundle, caplog: pytest.LogCaptureFixture) -> None:
    trust_sshd(app_home, sshd)

    async def go() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        engine.add_host(ssh_host(sshd))
        try:
            snap = await engine.session("box1").connect(timeout=60)
            assert snap.install is not None and snap.install.action == "installed"
        finally:
            await engine.close()

    with caplog.at_level(logging.INFO, logger="workroom"):
        asyncio.run(go())
    text = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert "can't open file" not in text and "Command failed" not in text, text
