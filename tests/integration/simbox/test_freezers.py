"""The fallbacks: the v1 freezer and SIGSTOP also put every process of a box to sleep and wake it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from simbox import freezer, netbox
from simbox_helpers import box_json, ssh_client, wait_state

pytestmark = [pytest.mark.integration, pytest.mark.root]


@pytest.mark.parametrize("mechanism", ["cgroup1", "signal"])
def test_fallback_freezer_sleeps_and_wakes(make_simbox, mechanism: str) -> None:  # type: ignore[no-untyped-def]
    if mechanism == "cgroup1" and freezer.cgroup1_freezer_root() is None:
        pytest.skip("no cgroup v1 freezer mounted here")
    state = make_simbox(boxes=1, window=1.5, freezer=mechanism)
    rec = state.boxes[0]
    assert rec.freezer == mechanism
    sshd = netbox.sshd_pid(rec)
    data = wait_state(state, "asleep", 3.0)
    assert data["freezer"] == mechanism
    # The box reads asleep once the freeze is asked for; the kernel settles it a moment later (FREEZING, or a
    # stop signal not yet taken by a running process), longer on a loaded machine: wait for it, bounded.
    def kernel_says_frozen() -> bool:
        if mechanism == "cgroup1":
            return Path(rec.cgroup or "", "freezer.state").read_text().strip() == "FROZEN"
        return freezer.proc_state(sshd) == "T"  # stopped

    deadline = time.monotonic() + 10
    while not kernel_says_frozen():
        assert time.monotonic() < deadline, "the kernel never settled the box frozen"
        time.sleep(0.05)
    client = ssh_client(state)
    try:
        _, out, _ = client.exec_command("echo up", timeout=10)
        assert out.read() == b"up\n"
    finally:
        client.close()
    assert box_json(state)["wakes"] == 1
    assert freezer.proc_state(sshd) in ("S", "R")
