"""`workroom status` says what keeps a host busy in the app's words, and a refused login in its own words with
the command line's advice: one vocabulary for both faces (core.busy_reasons, core.errors.ERROR_KINDS)."""

from __future__ import annotations

import pytest
from unit.core.status_factory import make_busy
from workroom.cli.words import snapshot_json as _snapshot_json
from workroom.cli.words import snapshot_line as _snapshot_line
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.errors import ErrorInfo, ErrorKind
from workroom.core.hosts import Host
from workroom.core.traits import SSH_TRAITS
from workroom.sessions.host_session import HostSnapshot

pytestmark = pytest.mark.unit


def test_the_status_line_uses_the_apps_words_not_raw_signals() -> None:
    status = make_busy(busy_reasons=["sleep: sleep (pid 16743)", "cpu: cc1plus (pid 9)"])
    snap = HostSnapshot(Host(name="dev", provider="ssh", address="dev.example"), SSH_TRAITS,
                        ConnectionInfo(state=ConnectionState.LIVE), status, None)
    line = _snapshot_line(snap)
    assert "waiting in a job: sleep; compiling: cc1plus" in line
    assert "pid" not in line and "sleep: sleep" not in line
    assert _snapshot_json(snap)["status"]["busy_reasons"] == ["sleep: sleep (pid 16743)", "cpu: cc1plus (pid 9)"]


def test_a_refused_login_reads_login_refused_with_the_command_lines_advice() -> None:
    error = ErrorInfo(title="Login refused", message="dev:22 did not accept user 'u'.",
                      hint="Check which key to use (--identity FILE or IdentityFile in ~/.ssh/config).",
                      kind=ErrorKind.LOGIN_REFUSED)
    snap = HostSnapshot(Host(name="dev", provider="ssh", address="dev.example"), SSH_TRAITS,
                        ConnectionInfo(state=ConnectionState.ERROR, error=error), None, None)
    assert "Login refused" in _snapshot_line(snap)
    badge = _snapshot_json(snap)["badge"]
    assert badge["label"] == "Login refused" and "--identity FILE" in badge["tooltip"]
    assert "Key file field" not in badge["tooltip"] and "cannot reach" not in badge["tooltip"]
