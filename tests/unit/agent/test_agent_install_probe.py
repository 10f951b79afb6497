"""The installer's probe (wr_agent/install_probe.py), run in this process against a home of the test's own:
what it answers for a fresh home, our bundle, another bundle, folders open to others or not the user's, a lock
held or not, the supervisor's note, and FIFOs in a file's place. Running it on a host, and becoming the relay,
is held by tests/integration/engine/test_reconnect_one_command.py and tests/integration/agent/."""

import fcntl
import hashlib
import io
import json
import os
import stat
import sys
import zipfile

import pytest
from fixtures.fifo import within
from wr_agent import install_probe

pytestmark = pytest.mark.unit
OURS = b"#!/usr/bin/env python3\nour bundle's bytes"
OURS_SHA = hashlib.sha256(OURS).hexdigest()


def paths(home):
    """The default layout's bundle and socket under `home`, as the app sends them."""
    return (str(home / ".local/share/wr-agent/wr-agent.pyz"), str(home / ".local/state/wr-agent/agent.sock"))


def install(home, data, mode=0o600):
    bundle, _ = paths(home)
    os.makedirs(os.path.dirname(bundle), mode=0o700)
    os.chmod(os.path.dirname(bundle), 0o700)  # whatever the umask made of the folders above
    for folder in (home / ".local", home / ".local/share"):
        os.chmod(str(folder), 0o700)
    with open(bundle, "wb") as f:
        f.write(data)
    os.chmod(bundle, mode)
    return bundle


def zipapp(files):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return b"#!/usr/bin/env python3\n" + out.getvalue()


@pytest.mark.parametrize("value", [
    {},
    {"a": None, "b": True, "c": False, "d": 7, "e": [], "f": ["x", None, [True]]},
    {"path": '/home/o\'neil/"quoted"\\back', "bidi": "\u202eevil\u2066", "ctl": "\x00\x1f\x7f\n\t", "é": "日本"},
    {"nested": {"deeper": {"list": [1, 2, {"k": "v"}]}}},
])
def test_the_answer_is_the_text_json_dumps_writes(value):
    assert install_probe.dumps(value) == json.dumps(value)


def test_a_fresh_home_has_nothing_installed_and_nothing_unsafe(home):
    bundle, sock = paths(home)
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer == {
        "python": "{}.{}.{}".format(*sys.version_info[:3]), "home": str(home), "bundle": bundle, "socket": sock,
        "sha256": None, "version": None, "running": False, "systemd_user": False, "repaired": [],
        "launchd": False, "supervisor": None}


def test_our_bundle_is_hashed_and_never_opened_as_an_archive(home):
    bundle, sock = paths(home)
    install(home, OURS)  # not a zip at all: opening it as one would say "unreadable"
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["sha256"] == OURS_SHA and answer["version"] is None and "unsafe" not in answer


def test_another_bundle_is_read_for_its_version_and_never_run(home, tmp_path):
    bundle, sock = paths(home)
    marker = tmp_path / "it-ran"
    other = zipapp({"__main__.py": f"open({str(marker)!r}, 'w').write('ran')\n",
                    "wr_agent/__init__.py": '__version__ = "99.0.1"\n'})
    install(home, other)
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["sha256"] == hashlib.sha256(other).hexdigest()
    assert answer["version"] == "wr-agent 99.0.1"
    assert not marker.exists()


@pytest.mark.parametrize(("data", "words"), [
    (zipapp({"wr_agent/__init__.py": "VERSION = 'none'\n"}), "unreadable: no version in the bundle"),
    (zipapp({"__main__.py": ""}), "unreadable: "),
    (b"not a zip", "unreadable: "),
])
def test_a_bundle_without_a_readable_version_says_so(home, data, words):
    bundle, sock = paths(home)
    install(home, data)
    assert install_probe.probe(bundle, sock, OURS_SHA)["version"].startswith(words)


def test_a_folder_open_to_others_is_closed_and_what_it_held_is_not_trusted(home):
    bundle, sock = paths(home)
    install(home, b"someone else's bytes")
    folder = os.path.dirname(bundle)
    os.chmod(folder, 0o777)
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["repaired"] == [folder] and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert answer["sha256"] is None and answer["version"] is None and "unsafe" not in answer  # replaced, never run


def test_our_own_bytes_in_a_folder_that_was_open_are_still_ours(home):
    bundle, sock = paths(home)
    install(home, OURS)
    os.chmod(os.path.dirname(bundle), 0o770)
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["repaired"] == [os.path.dirname(bundle)] and answer["sha256"] == OURS_SHA


def test_an_install_folder_that_is_a_link_or_a_file_is_unsafe(home, tmp_path):
    bundle, sock = paths(home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.makedirs(str(home / ".local/share"), mode=0o700)
    os.symlink(str(elsewhere), os.path.dirname(bundle))
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["unsafe"] == f"{os.path.dirname(bundle)} is not a folder (a symbolic link or a file)"
    assert answer["sha256"] is None and answer["running"] is False  # nothing more was looked at
    os.unlink(os.path.dirname(bundle))
    open(os.path.dirname(bundle), "w").close()
    assert "is not a folder" in install_probe.probe(bundle, sock, OURS_SHA)["unsafe"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a folder of another user")
def test_an_install_folder_of_another_user_is_unsafe(home):
    bundle, sock = paths(home)
    install(home, OURS)
    os.chown(os.path.dirname(bundle), 65534, 65534)
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["unsafe"] == f"{os.path.dirname(bundle)} belongs to uid 65534, not to this user (uid 0)"
    assert answer["sha256"] is None


def test_a_folder_above_it_open_to_its_group_is_unsafe_even_before_the_install(home):
    bundle, sock = paths(home)
    os.makedirs(str(home / ".local"), mode=0o700)
    os.chmod(str(home / ".local"), 0o770)  # the install folder does not exist yet: its nearest folder counts
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["unsafe"].startswith(f"{home / '.local'} is writable by its group")


def test_a_state_folder_under_one_its_group_can_write_is_unsafe_and_its_lock_is_not_read(home):
    """~/.local/state group-writable (umask 002, a shared group): another user could have put a folder of their
    own in the agent's place, with a lock naming any process of this user's: nothing there is looked at."""
    bundle, sock = paths(home)
    install(home, OURS)
    os.makedirs(os.path.dirname(sock), mode=0o700)
    state = home / ".local/state"
    os.chmod(str(state), 0o775)
    with open(sock + ".lock", "w") as f:
        f.write("1\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_EX)
        answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["unsafe"].startswith(f"{state} is writable by its group"), answer
    assert answer["running"] is False and "running_build" not in answer
    os.chmod(str(state), 0o755)
    assert "unsafe" not in install_probe.probe(bundle, sock, OURS_SHA, ask=False)


@pytest.mark.parametrize("make", ["symlink", "open", "missing_under_open"])
def test_a_state_folder_that_is_a_link_open_or_to_be_made_under_an_open_one_is_unsafe(home, tmp_path, make):
    bundle, sock = paths(home)
    folder = os.path.dirname(sock)
    os.makedirs(os.path.dirname(folder), mode=0o700)
    if make == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        os.symlink(str(tmp_path / "elsewhere"), folder)
        words = f"{folder} is not a folder (a symbolic link or a file)"
    elif make == "open":
        os.mkdir(folder, 0o700)
        os.chmod(folder, 0o711)
        words = f"{folder} is open to other users (mode 711; run chmod 700 {folder})"
    else:  # not made yet: what it would be made in counts
        os.chmod(os.path.dirname(folder), 0o777)
        words = f"{os.path.dirname(folder)} is writable by other users"
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["unsafe"].startswith(words), answer


@pytest.mark.parametrize("make", ["open_to_others", "symlink", "fifo"])
def test_a_bundle_that_is_not_the_users_alone_is_not_hashed(home, tmp_path, make):
    bundle, sock = paths(home)
    install(home, OURS)
    if make == "open_to_others":
        os.chmod(bundle, 0o666)
    elif make == "symlink":
        (tmp_path / "real").write_bytes(OURS)
        os.unlink(bundle)
        os.symlink(str(tmp_path / "real"), bundle)
    else:
        os.unlink(bundle)
        os.mkfifo(bundle)
    answer = within(lambda: install_probe.probe(bundle, sock, OURS_SHA), [bundle])
    assert answer["sha256"] is None


def test_a_held_lock_says_an_agent_runs(home):
    bundle, sock = paths(home)
    os.makedirs(os.path.dirname(sock), mode=0o700)
    assert install_probe.lock_held(sock) is False  # no lock file
    with open(sock + ".lock", "w") as f:
        assert install_probe.lock_held(sock) is False  # a lock file nobody holds
        fcntl.flock(f, fcntl.LOCK_EX)  # another open file: flock tells them apart, even in one process
        assert install_probe.lock_held(sock) is True
        answer = install_probe.probe(bundle, sock, OURS_SHA, ask=False)
    assert answer["running"] is True and "running_build" not in answer


def test_an_agent_that_does_not_answer_has_no_build(home):
    bundle, sock = paths(home)
    os.makedirs(os.path.dirname(sock), mode=0o700)
    with open(sock + ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        answer = install_probe.probe(bundle, sock, OURS_SHA)  # asks; nobody listens on the socket
    assert answer["running"] is True and answer["running_build"] is None and answer["running_stalled"] is False


def test_the_supervisors_note_is_read_only_from_a_regular_file(home):
    _, sock = paths(home)
    os.makedirs(os.path.dirname(sock), mode=0o700)
    assert install_probe.supervisor_named(sock) is None
    with open(sock + ".supervisor", "w") as f:
        f.write("  the agent's own supervisor\n" + "x" * 200)
    assert install_probe.supervisor_named(sock) == "the agent's own supervisor\n" + "x" * 71
    os.unlink(sock + ".supervisor")
    os.mkfifo(sock + ".supervisor")
    os.mkfifo(sock + ".lock")
    answer = within(lambda: install_probe.probe(*paths(home), OURS_SHA), [sock + ".supervisor", sock + ".lock"])
    assert answer["supervisor"] is None and answer["running"] is False


def test_which_finds_only_executable_files(home, tmp_path):
    bin_dir = tmp_path / "bin"
    (bin_dir / "tool").write_text("#!/bin/sh\n")
    assert install_probe.which("tool") is False  # not executable
    os.chmod(str(bin_dir / "tool"), 0o755)
    (bin_dir / "folder").mkdir()
    assert install_probe.which("tool") is True and install_probe.which("folder") is False
    assert install_probe.which("absent") is False


def test_with_launchd_its_folder_must_be_safe_too(home, tmp_path):
    """launchctl cannot run here (macOS only); the probe only looks for it on PATH, so an empty executable
    of that name stands in for it."""
    bundle, sock = paths(home)
    launchctl = tmp_path / "bin" / "launchctl"
    launchctl.write_text("#!/bin/sh\nexit 1\n")
    os.chmod(str(launchctl), 0o755)
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["launchd"] is True and "unsafe" not in answer  # ~/Library does not exist: the home counts
    os.makedirs(str(home / "Library/LaunchAgents"), mode=0o700)
    os.chmod(str(home / "Library/LaunchAgents"), 0o775)
    answer = install_probe.probe(bundle, sock, OURS_SHA)
    assert answer["unsafe"].startswith(f"{home / 'Library/LaunchAgents'} is writable by its group")


@pytest.mark.parametrize(("sha", "running", "follows"), [
    (OURS_SHA, True, True), (OURS_SHA, False, False), (None, True, False), ("0" * 64, True, False),
])
def test_the_relay_follows_only_our_bundle_with_an_agent_running(sha, running, follows):
    assert bool(install_probe.relay_follows({"sha256": sha, "running": running}, OURS_SHA)) is follows
