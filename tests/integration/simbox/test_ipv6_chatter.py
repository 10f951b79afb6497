"""Background chatter is not work (docs/simbox.md), on a real box: with IPv6 left on, the box's own router
solicitations (70-byte ICMPv6 type 133 frames nobody answers) move the tap's counters and reset the idle
clock; with IPv6 off (the default, see test_sleep_wake) no IPv6 frame appears and the box sleeps at the
window."""

from __future__ import annotations

import time

import pytest
from simbox_helpers import TapCapture, box_json, is_router_solicitation, wait_for, wait_state

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]

WINDOW = 3.0


def test_router_solicitations_move_the_counters_and_delay_sleep(make_simbox) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    state = make_simbox(boxes=1, window=WINDOW, ipv6=True)
    rec = state.boxes[0]
    cap = TapCapture(rec.host_if)
    try:
        # the kernel gives the box's eth0 a link-local address and, after DAD, solicits a router
        frames = cap.frames(12.0, stop=lambda f, from_box: from_box and is_router_solicitation(f))
    finally:
        cap.close()
    rs = [(t, f) for t, f, from_box in frames if from_box and is_router_solicitation(f)]
    assert rs, f"no router solicitation from the box within 12 s ({len(frames)} frames seen)"
    rs_at, frame = rs[0]
    assert len(frame) == 70  # 14 Ethernet + 40 IPv6 + 16 ICMPv6
    # the next once-a-second counter read sees the RS's bytes and resets the clock
    data = wait_for(lambda: (d := box_json(state))["last_byte_at"] and d["last_byte_at"] >= rs_at and d, 1.5)
    assert data["last_activity_reason"] == "bytes"
    asleep = wait_state(state, "asleep", 15.0)
    first_sleep = next(h for h in asleep["history"] if h["event"] == "sleep")
    slept_after = first_sleep["at"] - (time.time() - (time.monotonic() - started))
    # without the chatter the box would have slept WINDOW s after up; the RS pushed that back
    assert slept_after > WINDOW + 0.8, slept_after
    print(f"\nIPv6 on: first RS {rs_at - (time.time() - (time.monotonic() - started)):.2f} s after up began, "
          f"first sleep {slept_after:.2f} s after (window {WINDOW} s)")
