"""The installer's uninstall (wr_agent/uninstall.py), run in this process against a home of the test's own:
which files it removes (only the agent's own), what it keeps with `stop-only`, and that an agent it cannot
stop keeps every file. Stopping real agents and their supervisors is held by
tests/integration/agent/test_agent_install_steps.py and, over sshd, tests/integration/engine/test_uninstall_agent.py."""

import fcntl
import json
import os

import pytest
from wr_agent import uninstall

pytestmark = pytest.mark.unit
PREFIX = "dev.workroom.companion.agent"


def installed(home):
    """An installed agent's files as it leaves them (nothing running), and files of others beside them."""
    share, state = home / ".local/share/wr-agent", home / ".local/state/wr-agent"
    share.mkdir(parents=True, mode=0o700)
    state.mkdir(parents=True, mode=0o700)
    ours = [share / "wr-agent.pyz", share / ".wr-agent.pyz.staged-0a1b2c", state / "agent.sock.lock",
            state / "agent.sock.log", state / "agent.sock.supervisor", state / "agent.sock.timeline"]
    for path in ours:
        path.write_text("x")
    return str(share / "wr-agent.pyz"), str(state / "agent.sock"), [str(p) for p in ours]


def test_it_removes_the_agents_files_and_its_folders_once_empty(home):
    bundle, sock, ours = installed(home)
    out = uninstall.uninstall(bundle, sock, PREFIX)
    assert sorted(out.pop("removed")) == sorted(ours)
    assert out == {"stopped": [], "problems": [], "still_running": False}
    assert not os.path.exists(os.path.dirname(bundle)) and not os.path.exists(os.path.dirname(sock))


def test_it_leaves_what_is_not_the_agents(home):
    bundle, sock, ours = installed(home)
    mine = [os.path.join(os.path.dirname(sock), "notes.txt"), os.path.join(os.path.dirname(bundle), "other.pyz"),
            os.path.join(os.path.dirname(sock), "other.sock.lock")]
    for path in mine:
        with open(path, "w") as f:
            f.write("mine")
    out = uninstall.uninstall(bundle, sock, PREFIX)
    assert sorted(out["removed"]) == sorted(ours)
    assert all(os.path.exists(p) for p in mine)  # and so their folders stay


def test_stop_only_keeps_every_file(home):
    bundle, sock, ours = installed(home)
    out = uninstall.uninstall(bundle, sock, PREFIX, stop_only=True)
    assert out == {"stopped": [], "removed": [], "problems": [], "still_running": False}
    assert all(os.path.exists(p) for p in ours)


def test_the_unit_and_the_plist_are_removed_too(home):
    bundle, sock, _ = installed(home)
    unit = home / ".config/systemd/user/wr-agent.service"
    plist = home / "Library/LaunchAgents" / (uninstall.launchd_label(PREFIX, sock) + ".plist")
    for path in (unit, plist):
        path.parent.mkdir(parents=True)
        path.write_text("x")
    out = uninstall.uninstall(bundle, sock, PREFIX)
    assert str(unit) in out["removed"] and str(plist) in out["removed"]
    assert out["stopped"] == []  # neither systemctl nor launchctl on PATH: nothing to stop them with


def test_an_agent_whose_pid_cannot_be_read_is_not_signalled_and_keeps_its_files(home):
    bundle, sock, ours = installed(home)
    with open(sock + ".lock", "w") as lock:
        lock.write("not a pid\n")
        lock.flush()
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert uninstall.holder(sock) == -1
        out = uninstall.uninstall(bundle, sock, PREFIX)
    assert out["still_running"] is True and out["stopped"] == [] and out["removed"] == []
    assert all(os.path.exists(p) for p in ours)


def test_the_lock_names_its_holder_only_while_held(home):
    _, sock, _ = installed(home)
    with open(sock + ".lock", "w") as lock:
        lock.write("4242\n")
        lock.flush()
        assert uninstall.holder(sock) is None  # written but not held: nobody serves
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert uninstall.holder(sock) == 4242
    os.unlink(sock + ".lock")
    assert uninstall.holder(sock) is None


def test_a_file_it_cannot_remove_is_a_problem_not_a_failure(home):
    bundle, sock, _ = installed(home)
    os.unlink(sock + ".log")
    os.mkdir(sock + ".log")  # a folder in a file's place: unlink refuses it
    out = uninstall.uninstall(bundle, sock, PREFIX)
    assert out["problems"] == [f"{sock}.log: Is a directory"]
    assert os.path.isdir(sock + ".log") and not os.path.exists(bundle)


def test_main_prints_one_json_line(home, capsys):
    bundle, sock, ours = installed(home)
    home_relative = [p.replace(str(home), "~", 1) for p in (bundle, sock)]
    assert uninstall.main([*home_relative, PREFIX, "stop-only"]) == 0
    assert json.loads(capsys.readouterr().out) == {"stopped": [], "removed": [], "problems": [],
                                                   "still_running": False}
    assert uninstall.main([*home_relative, PREFIX]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["removed"]) == sorted(ours)  # `~` is this user's home
