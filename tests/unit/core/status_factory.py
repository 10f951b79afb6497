"""Builds agent status objects for core tests, shaped as docs/protocol.md says (busy reasons as text only, as an
agent older than `structured_reasons` sends them, unless a test gives `structured_reasons` too)."""

from __future__ import annotations

from typing import Any

from workroom.core.protocol import Status

BUILD = "a" * 64


def status_dict(**overrides: Any) -> dict[str, Any]:
    """A status object as the agent sends it: IDLE, nothing pending, heartbeat idle."""
    data: dict[str, Any] = {
        "verdict": "IDLE",
        "classifier_verdict": "IDLE",
        "busy_reasons": [],
        "stalled": False,
        "monotonic": 1000.0,
        "awake_seconds": 0,
        "ceiling_seconds": 14400,
        "prompt_timeout_seconds": 600,
        "ask_at_ceiling": False,
        "awake_ceiling_exceeded": False,
        "prompt_pending": False,
        "prompt_deadline": None,
        "suppressed": False,
        "asserting": False,
        "keep_awake": {
            "last_sent": None,
            "error": None,
            "target": "10.0.0.1:9",
            "interval_seconds": 60,
            "enabled": True,
        },
        "settings_error": None,
        "workroom": "box1",
        "agent": {"version": "0.1.0", "protocol": 1, "build": BUILD},
        "sampler": "proc",
    }
    data.update(overrides)
    return data


def busy_dict(**overrides: Any) -> dict[str, Any]:
    """BUSY with a reason and the heartbeat asserting."""
    base = {
        "verdict": "BUSY",
        "classifier_verdict": "BUSY",
        "busy_reasons": ["cpu: cargo (pid 4121)"],
        "awake_seconds": 120,
        "asserting": True,
    }
    base.update(overrides)
    return status_dict(**base)


def make_status(**overrides: Any) -> Status:
    return Status.model_validate(status_dict(**overrides))


def make_busy(**overrides: Any) -> Status:
    return Status.model_validate(busy_dict(**overrides))
