"""A box has its own terminals, as any container or VM has: the machine's ptys are not the box's.

Without this a keystroke in any terminal of the machine running the simulator (another test, a developer's
shell) reads to the box's agent as a keystroke in the box, and a kept box never sleeps.
Real simbox, real sshd allocating a pty, real ptys on the machine.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import simbox
from simbox import control
from simbox_helpers import home_of, ssh_client

pytestmark = [pytest.mark.integration, pytest.mark.root]

LIST_PTYS = ["python3", "-c", "import os; s = os.stat('/dev/pts'); print(s.st_dev, *sorted(os.listdir('/dev/pts')))"]


def _inside(state: simbox.SimboxState) -> tuple[int, list[str]]:
    out = subprocess.run(control.exec_argv("box1", LIST_PTYS, home=home_of(state)), capture_output=True,
                         text=True, timeout=30, check=True).stdout.split()
    return int(out[0]), out[1:]


def test_the_machines_ptys_are_not_the_boxs(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=1, window=30.0)
    leader, follower = os.openpty()  # a terminal on the machine, as a developer's shell has
    try:
        here = os.path.basename(os.ttyname(follower))
        dev, names = _inside(state)
        assert dev != os.stat("/dev/pts").st_dev, "the box sees the machine's /dev/pts"
        assert names == ["ptmx"], f"a fresh box has no terminal but saw {names} (the machine's {here} among them?)"
    finally:
        os.close(leader)
        os.close(follower)


def test_a_login_with_a_terminal_gets_a_pty_of_the_box(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=1, window=30.0)
    client = ssh_client(state)
    try:
        stdin, stdout, _ = client.exec_command("tty; sleep 5", get_pty=True, timeout=20)
        name = stdout.readline().strip()
        assert name.startswith("/dev/pts/"), name
        _, inside = _inside(state)
        assert os.path.basename(name) in inside, (name, inside)
        stdin.channel.close()
    finally:
        client.close()
