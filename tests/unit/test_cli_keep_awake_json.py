"""`workroom status --json` (and `connect --watch --json`) carry whether the provider sees the keep-awake:
`keep_awake.confirmed` is true, false, or null when it cannot be known — and the provider's last-seen age."""

from __future__ import annotations

import json
import time

import pytest
from unit.core.status_factory import make_busy
from workroom.cli.words import snapshot_json as _snapshot_json
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.heartbeat_proof import CANNOT_READ, HeartbeatProof, IdleClockReading, judge
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.traits import BOXD_TRAITS

pytestmark = pytest.mark.unit


def _json(proof: HeartbeatProof | None) -> dict[str, object]:
    host = Host(name="m1", provider="boxd", address="m1.example")
    info = ConnectionInfo(state=ConnectionState.LIVE, heartbeat_proof=proof)
    snap = HostSnapshot(host, BOXD_TRAITS.with_idle_window(60).with_heartbeat_interval(20), info, make_busy(), None)
    out = json.loads(json.dumps(_snapshot_json(snap)))  # what is printed: plain JSON
    keep: dict[str, object] = out["keep_awake"]
    return keep


def _proof(idle: float) -> HeartbeatProof:
    reading = IdleClockReading(idle_seconds=idle, window_seconds=60, read_at=time.monotonic())
    return judge(reading, interval_seconds=20, own_traffic_at=None, previous=None)


def test_confirmed_carries_the_providers_last_seen_age() -> None:
    keep = _json(_proof(4))
    assert keep["confirmed"] is True and keep["state"] == "confirmed"
    assert 4 <= keep["provider_last_seen_age_seconds"] < 6  # type: ignore[operator]
    assert keep["provider_idle_window_seconds"] == 60


def test_not_seen_is_false_with_the_sentence() -> None:
    keep = _json(_proof(41))
    assert keep["confirmed"] is False
    assert keep["why"] == "The provider is not seeing the heartbeat (idle 41 s of a 60 s window)."


@pytest.mark.parametrize("proof", [None, CANNOT_READ])
def test_unknown_is_null_never_true(proof: HeartbeatProof | None) -> None:
    keep = _json(proof)
    assert keep["confirmed"] is None and keep["provider_last_seen_age_seconds"] is None
