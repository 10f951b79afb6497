"""The agent's state folder is trusted by no step that reaches its socket or lock unless nobody else could have
put it there (wr_agent/state_folder.py): the relay, the wait after a start, the replacement of a frozen agent,
the uninstall and the command line's client, each run in this process against a home of the test's own whose
~/.local/state its group can write (umask 002, a shared group). Over a real sshd with a real second user:
tests/integration/remote/test_agent_impostor.py."""

import fcntl
import os
import socket
import subprocess
import sys
import time

import pytest
from wr_agent import client, install_wait, relay, replace_frozen, uninstall
from wr_agent.state_folder import unsafe_state_folder

pytestmark = pytest.mark.unit


@pytest.fixture
def swappable(home):
    """An agent's state folder, private itself, under a ~/.local/state its group can write; a socket listening
    there and its lock held, naming a process of this user's that is not the agent (what a second user who
    swapped the folder would leave). Yields (socket path, listener, that process)."""
    state = home / ".local/state"
    folder = state / "wr-agent"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(str(state), 0o775)
    sock = str(folder / "agent.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(sock)
    listener.listen(4)
    listener.settimeout(0.3)
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with open(sock + ".lock", "w") as lock:
            lock.write(f"{victim.pid}\n")
            lock.flush()
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield sock, listener, victim
    finally:
        listener.close()
        victim.kill()
        victim.wait()


def knocked(listener):
    """Whether anything connected to the listener."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return False
    conn.close()
    return True


def test_the_rule_names_the_folder_above_that_others_can_write(swappable, home):
    sock, _, _ = swappable
    state = home / ".local/state"
    assert unsafe_state_folder(os.path.dirname(sock)).startswith(f"{state} is writable by its group")
    os.chmod(str(state), 0o755)
    assert unsafe_state_folder(os.path.dirname(sock)) is None


def test_the_relay_refuses_before_it_connects(swappable):
    sock, listener, _ = swappable
    with pytest.raises(relay.Unreachable, match="writable by its group"):
        relay.run(sock)
    assert not knocked(listener)


def test_the_wait_after_a_start_refuses_without_waiting(swappable):
    sock, listener, _ = swappable
    started = time.monotonic()
    why = install_wait.wait_for_agent(sock, 5.0, "a" * 64)
    assert "refusing the agent's socket" in why and "writable by its group" in why
    assert time.monotonic() - started < 1.0 and not knocked(listener)


def test_a_frozen_agent_is_not_replaced_and_the_lock_is_not_obeyed(swappable):
    sock, _, victim = swappable
    answer = replace_frozen.replace(sock)
    assert "writable by its group" in answer["refused"]
    time.sleep(0.2)
    assert victim.poll() is None  # never signalled


def test_the_uninstall_stops_and_removes_nothing(swappable, home):
    sock, _, victim = swappable
    bundle = home / ".local/share/wr-agent/wr-agent.pyz"
    bundle.parent.mkdir(parents=True, mode=0o700)
    bundle.write_bytes(b"x")
    answer = uninstall.uninstall(str(bundle), sock, "dev.workroom.companion.agent", term_seconds=0.5)
    assert set(answer) == {"unsafe"} and "writable by its group" in answer["unsafe"]
    assert victim.poll() is None and bundle.exists() and os.path.exists(sock + ".lock")


def test_the_command_lines_client_refuses(swappable):
    sock, listener, _ = swappable
    with pytest.raises(client.AgentUnreachable, match="writable by its group"):
        client.Connection(sock, timeout=1.0)
    assert not knocked(listener)
