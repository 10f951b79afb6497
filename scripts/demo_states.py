"""Constructed host snapshots, one per badge state, for screenshots, the benchmark and GUI tests.

They are what a `HostSession` would publish; building them by hand lets every state be shown and
checked without waiting for a real box to fall asleep or a real ceiling to pass. A development
tool: it lives beside the screenshot script, outside the package the app ships.
"""

from __future__ import annotations

import time
from typing import Any

from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.errors import ErrorInfo, ErrorKind
from workroom.core.hosts import Host
from workroom.core.protocol import PromptEvent, Status
from workroom.core.traits import BOXD_TRAITS, LOCAL_TRAITS, SSH_TRAITS, ProviderTraits
from workroom.sessions.host_session import HostSnapshot

AGENT_MONOTONIC = 10_000.0


def make_status(workroom: str, **changes: Any) -> Status:
    """A valid agent status (idle, defaults of a current agent) with `changes` applied."""
    data: dict[str, Any] = {
        "verdict": "IDLE",
        "classifier_verdict": "IDLE",
        "busy_reasons": [],
        "stalled": False,
        "monotonic": AGENT_MONOTONIC,
        "awake_seconds": 0.0,
        "ceiling_seconds": 4 * 3600.0,
        "prompt_timeout_seconds": 600.0,
        "ask_at_ceiling": False,
        "awake_ceiling_exceeded": False,
        "prompt_pending": False,
        "prompt_deadline": None,
        "suppressed": False,
        "asserting": False,
        "keep_awake": {"last_sent": None, "error": None, "target": None, "interval_seconds": 60.0,
                       "enabled": True},
        "settings_error": None,
        "workroom": workroom,
        "agent": {"version": "0.1.0", "protocol": 1, "build": "demo"},
        "sampler": "proc",
    }
    data.update(changes)
    if data["verdict"] == "BUSY" and "classifier_verdict" not in changes:
        data["classifier_verdict"] = "BUSY"
    return Status.model_validate(data)


def make_snapshot(
    name: str,
    provider: str = "ssh",
    state: ConnectionState = ConnectionState.LIVE,
    *,
    traits: ProviderTraits | None = None,
    now: float | None = None,
    error: ErrorInfo | None = None,
    prompt: bool = False,
    **status_changes: Any,
) -> HostSnapshot:
    """A snapshot of host `name`; a status is included when the state is live/quiet or changes are given."""
    now = time.monotonic() if now is None else now
    host = Host(name=name, provider=provider, address=None if provider == "local" else f"{name}.example")
    traits = traits or {"local": LOCAL_TRAITS, "boxd": BOXD_TRAITS}.get(provider, SSH_TRAITS)
    live = state in (ConnectionState.LIVE, ConnectionState.QUIET)
    status = make_status(name, **status_changes) if (live or status_changes) else None
    info = ConnectionInfo(state=state, since_monotonic=now - 5, error=error,
                          status_received_monotonic=now if status else None,
                          retry_at_monotonic=now + 8 if state is ConnectionState.BACKING_OFF else None,
                          host_key_fingerprint="SHA256:q8H0bQ0qK1m1m2oXkz4vU5y3d2C8rB3a4Qe7nYt9wXc"
                          if state is ConnectionState.HOST_KEY_QUESTION else None)
    event = None
    if prompt and status is not None and status.prompt_deadline is not None:
        event = PromptEvent(event="awake_ceiling_prompt", workroom=name, awake_seconds=status.awake_seconds,
                            prompt_deadline=status.prompt_deadline)
    return HostSnapshot(host, traits, info, status, event, now if status else None)


def busy(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"verdict": "BUSY", "classifier_verdict": "BUSY", "asserting": True,
                            "awake_seconds": 42 * 60.0,
                            "busy_reasons": ["cpu: cc1plus (pid 4121)", "tcp: ssh (pid 4133)"],
                            "structured_reasons": [
                                {"class": "cpu", "subject": "cc1plus", "pid": 4121, "detail": {}},
                                {"class": "tcp", "subject": "ssh", "pid": 4133,
                                 "detail": {"peer": "10.0.0.5", "port": 22}}]}
    if "busy_reasons" in changes and "structured_reasons" not in changes:
        del base["structured_reasons"]  # other reasons, as text only (an older agent's way)
    base.update(changes)
    return base


def every_state(now: float | None = None) -> dict[str, HostSnapshot]:
    """One snapshot per badge state the app can show, keyed by a short description."""
    now = time.monotonic() if now is None else now
    lost = ErrorInfo(title="Lost the host", message="The connection to build-box ended: connection refused.",
                     hint="The app reconnects on its own when the host is reachable again.")
    refused = ErrorInfo(title="Login refused", message="dev@shared-box:22 did not accept user 'dev' with key "
                        "~/.ssh/id_ed25519.", hint="Check which key to use (--identity FILE).",
                        kind=ErrorKind.LOGIN_REFUSED)
    past = busy(awake_seconds=4 * 3600 + 300.0, awake_ceiling_exceeded=True, ask_at_ceiling=True,
                prompt_pending=True, prompt_deadline=AGENT_MONOTONIC + 420.0)
    return {
        "idle": make_snapshot("laptop", "local", now=now),
        "busy": make_snapshot("gpu-box", "ssh", now=now, **busy()),
        "asking": make_snapshot("render-farm", "boxd", now=now, prompt=True, **past),
        "busy_past_ceiling": make_snapshot(
            "workstation", "ssh", now=now, **busy(awake_seconds=9 * 3600.0, awake_ceiling_exceeded=True)),
        "busy_not_kept_awake": make_snapshot(
            "ci-runner", "boxd", now=now,
            **busy(awake_seconds=5 * 3600.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, suppressed=True,
                   asserting=False)),
        "heartbeat_failing": make_snapshot(
            "data-box", "boxd", now=now,
            **busy(keep_awake={"last_sent": AGENT_MONOTONIC - 200, "error": "connection refused by 10.0.0.1:9",
                               "target": "10.0.0.1:9", "interval_seconds": 60.0, "enabled": True})),
        "asleep": make_snapshot("nightly", "boxd", ConnectionState.ASLEEP, now=now),
        "offline": make_snapshot("build-box", "ssh", ConnectionState.BACKING_OFF, now=now, error=lost),
        "login_refused": make_snapshot("shared-box", "ssh", ConnectionState.ERROR, now=now, error=refused),
        "unknown": make_snapshot("new-vm", "ssh", ConnectionState.DISCONNECTED, now=now),
        "connecting": make_snapshot("staging", "ssh", ConnectionState.CONNECTING, now=now),
        "host_key_question": make_snapshot("fresh-box", "ssh", ConnectionState.HOST_KEY_QUESTION, now=now),
    }
