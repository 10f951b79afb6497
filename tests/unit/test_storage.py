"""Paths, and hosts/settings on disk: atomic writes, mode 0600, damaged files kept aside.

These touch temporary files only (WORKROOM_HOME points into tmp_path).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from fixtures.fifo import within
from workroom.core.app_settings import AppSettings
from workroom.core.ceiling import CeilingSettings
from workroom.core.hosts import Host, HostsFile
from workroom.paths import HOME_ENV, AppPaths, app_paths
from workroom.storage import (
    Loaded,
    atomic_write_bytes,
    load_hosts,
    load_settings,
    save_hosts,
    save_settings,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def paths(tmp_path: Path) -> AppPaths:
    return app_paths({HOME_ENV: str(tmp_path / "home")}).ensure()


def test_workroom_home_overrides_every_path(tmp_path: Path) -> None:
    p = app_paths({HOME_ENV: str(tmp_path)})
    for directory in (p.config_dir, p.state_dir, p.cache_dir, p.runtime_dir, p.log_dir):
        assert directory.is_relative_to(tmp_path)
    assert len({p.config_dir, p.state_dir, p.cache_dir, p.runtime_dir, p.log_dir}) == 5
    assert p.hosts_file.parent == p.config_dir and p.known_hosts_file.parent == p.config_dir
    p.ensure()
    assert stat.S_IMODE(p.config_dir.stat().st_mode) == 0o700


def test_platform_paths_without_workroom_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    p = app_paths({})
    assert all("workroom" in str(d) for d in (p.config_dir, p.state_dir, p.cache_dir, p.log_dir))
    assert p.runtime_dir.is_relative_to(p.cache_dir)  # private, not a shared /tmp fallback


def test_first_run_has_this_computer(paths: AppPaths) -> None:
    loaded = load_hosts(paths, hostname="devbox.example.org")
    assert loaded.problem is None
    assert [(h.name, h.provider) for h in loaded.value.hosts] == [("devbox", "local")]
    assert not paths.hosts_file.exists()  # loading writes nothing


def test_hosts_round_trip_atomically_with_mode_0600(paths: AppPaths) -> None:
    hosts = HostsFile.first_run("me").add(Host(name="gpu", provider="boxd", address="10.1.2.3", port=2222))
    save_hosts(paths, hosts)
    assert stat.S_IMODE(paths.hosts_file.stat().st_mode) == 0o600
    assert load_hosts(paths, hostname="other").value == hosts
    assert [p.name for p in paths.config_dir.iterdir()] == ["hosts.json"]  # no temp file left


def test_settings_round_trip(paths: AppPaths) -> None:
    assert load_settings(paths).value == AppSettings()
    settings = AppSettings(ceiling=CeilingSettings(ceiling_seconds=90, ask_at_ceiling=True))
    save_settings(paths, settings)
    assert load_settings(paths).value == settings
    assert stat.S_IMODE(paths.settings_file.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe\x00",
        b"[]",
        json.dumps({"version": 1, "hosts": [{"name": "a/b", "provider": "ssh"}]}).encode(),
        json.dumps({"version": 1, "hosts": [{"name": "a"}, {"name": "A"}]}).encode(),
        json.dumps({"version": 99, "hosts": []}).encode(),
        b"",
    ],
)
def test_damaged_hosts_file_is_kept_aside_and_the_app_starts(paths: AppPaths, content: bytes) -> None:
    paths.hosts_file.write_bytes(content)
    loaded = load_hosts(paths, hostname="me")
    assert loaded.value == HostsFile.first_run("me")
    problem = loaded.problem
    assert problem is not None and problem.title and problem.message and problem.hint
    assert loaded.moved_aside_to is not None and loaded.moved_aside_to.name.startswith("hosts.json.corrupt-")
    assert loaded.moved_aside_to.read_bytes() == content  # nothing lost
    assert str(loaded.moved_aside_to) in problem.message
    assert not paths.hosts_file.exists()


def test_damaged_settings_out_of_range_says_which_field(paths: AppPaths) -> None:
    paths.settings_file.write_text(json.dumps({"version": 1, "ceiling": {"ceiling_seconds": 10}}))
    loaded = load_settings(paths)
    assert loaded.value == AppSettings()
    assert loaded.problem is not None and "ceiling_seconds" in loaded.problem.message


def test_two_damaged_files_in_the_same_second_are_both_kept(paths: AppPaths) -> None:
    asides = []
    for content in (b"one", b"two"):
        paths.settings_file.write_bytes(content)
        loaded = load_settings(paths)
        asides.append(loaded.moved_aside_to)
    assert asides[0] != asides[1]
    assert {a.read_bytes() for a in asides if a} == {b"one", b"two"}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file, so permissions cannot make it unreadable")
def test_unreadable_file_is_reported_and_left_in_place(paths: AppPaths) -> None:
    paths.hosts_file.write_text("{}")
    paths.hosts_file.chmod(0)
    loaded = load_hosts(paths, hostname="me")
    assert loaded.problem is not None and loaded.moved_aside_to is None and paths.hosts_file.exists()


def test_unreadable_path_is_reported_and_left_in_place(paths: AppPaths) -> None:
    paths.hosts_file.mkdir()  # a directory where the file should be: open() fails even for root
    loaded = load_hosts(paths, hostname="me")
    assert loaded.problem is not None and "Could not read" in loaded.problem.title
    assert loaded.moved_aside_to is None and paths.hosts_file.is_dir()


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    atomic_write_bytes(target, b"old")

    with pytest.raises(TypeError):
        atomic_write_bytes(target, "text is not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_atomic_write_replaces_not_rewrites(tmp_path: Path) -> None:
    """A reader holding the old file keeps seeing the old bytes: the new file is a new inode."""
    target = tmp_path / "f.json"
    atomic_write_bytes(target, b"old")
    with target.open("rb") as reader:
        atomic_write_bytes(target, b"new")
        assert reader.read() == b"old"
    assert target.read_bytes() == b"new"


def _load_in_time(paths: AppPaths) -> Loaded[HostsFile]:
    """load_hosts on a thread, failing (not hanging the suite) if it blocks."""
    return within(lambda: load_hosts(paths, hostname="me"), [paths.hosts_file])


def test_a_fifo_as_hosts_file_is_reported_like_a_damaged_file(paths: AppPaths) -> None:
    os.mkfifo(paths.hosts_file)
    loaded = _load_in_time(paths)
    assert loaded.problem is not None and "not a regular file" in loaded.problem.message
    assert loaded.value.hosts[0].name == "me"
    aside = loaded.moved_aside_to
    assert aside is not None and stat.S_ISFIFO(os.lstat(aside).st_mode) and not paths.hosts_file.exists()


def test_stale_temp_files_of_a_dead_save_are_removed_fresh_ones_kept(paths: AppPaths) -> None:
    stale = paths.hosts_file.parent / ".hosts.json.abc123.tmp"
    fresh = paths.hosts_file.parent / ".hosts.json.def456.tmp"
    other = paths.hosts_file.parent / ".settings.json.abc123.tmp"
    for p in (stale, fresh, other):
        p.write_text("{")
    old = stale.stat().st_mtime - 3600
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    load_hosts(paths, hostname="me")
    assert not stale.exists() and fresh.exists() and other.exists()
    load_settings(paths)
    assert not other.exists()


def test_a_settings_file_from_a_newer_app_loads_and_keeps_what_it_does_not_know(paths: AppPaths) -> None:
    """Going back a version must not set the newer app's settings.json aside as damaged."""
    newer = {"version": 1, "theme": "dark", "ceiling": {"ceiling_seconds": 3600.0, "prompt_timeout_seconds": 600.0,
                                                       "ask_at_ceiling": True, "quiet_hours": "22-07"}}
    paths.settings_file.write_text(json.dumps(newer))
    loaded = load_settings(paths)
    assert loaded.problem is None and loaded.moved_aside_to is None
    assert loaded.value.ceiling.ceiling_seconds == 3600 and loaded.value.ceiling.ask_at_ceiling is True
    changed = loaded.value.model_copy(update={
        "ceiling": loaded.value.ceiling.replaced(ceiling_seconds=7200)})
    save_settings(paths, changed)
    saved = json.loads(paths.settings_file.read_text())
    assert {key: saved[key] for key in newer} == {**newer, "ceiling": {**newer["ceiling"], "ceiling_seconds": 7200.0}}


CHANGER = """
import sys
from workroom.core.hosts import Host
from workroom.paths import app_paths
from workroom.storage import update_hosts, update_json, update_settings
paths = app_paths({"WORKROOM_HOME": sys.argv[1]}).ensure()
me = sys.argv[2]
for i in range(int(sys.argv[3])):
    update_hosts(paths, lambda hosts: hosts.add(Host(name=f"{me}-{i}", provider="ssh", address="10.0.0.1")),
                 hostname="me")
    update_json(paths.state_dir / "last_verdicts.json", lambda data: {**data, f"{me}-{i}": {"verdict": "BUSY"}},
                limit=1 << 20)
update_settings(paths, lambda s: s.with_changes({"terminal_app": me} if me == "a" else {"ceiling_seconds": 900}))
"""


def test_changes_from_processes_at_once_all_land(paths: AppPaths) -> None:
    """Four processes, each adding 12 hosts and 12 records, and each changing one setting, all at once: every
    change lands (a read-modify-write of the whole file without the lock lost most of them)."""
    import subprocess
    import sys

    home = str(paths.config_dir.parent)
    procs = [subprocess.Popen([sys.executable, "-c", CHANGER, home, who, "12"]) for who in "abcd"]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    names = set(load_hosts(paths, hostname="me").value.names())
    assert names == {"me"} | {f"{who}-{i}" for who in "abcd" for i in range(12)}
    verdicts = json.loads((paths.state_dir / "last_verdicts.json").read_text())
    assert set(verdicts) == {f"{who}-{i}" for who in "abcd" for i in range(12)}
    settings = load_settings(paths).value
    assert settings.terminal_app == "a" and settings.ceiling.ceiling_seconds == 900


def test_a_file_that_cannot_be_read_is_never_written_over(paths: AppPaths) -> None:
    from workroom.core.errors import UserError
    from workroom.storage import update_hosts

    paths.hosts_file.mkdir()  # a folder where the file should be: it cannot be read, so it is not replaced
    with pytest.raises(UserError, match="Could not read"):
        update_hosts(paths, lambda hosts: hosts.add(Host(name="gpu", provider="ssh")), hostname="me")
    assert paths.hosts_file.is_dir()


def test_a_damaged_file_is_kept_and_the_change_made_to_what_the_caller_held(paths: AppPaths) -> None:
    from workroom.storage import update_hosts

    held = HostsFile.first_run("me").add(Host(name="gpu", provider="ssh"))
    paths.hosts_file.write_text("{half an edit")
    after = update_hosts(paths, lambda hosts: hosts.add(Host(name="tpu", provider="ssh")), hostname="me",
                         fallback=held)
    assert after.names() == ["me", "gpu", "tpu"] and load_hosts(paths).value == after
    kept = list(paths.config_dir.glob("hosts.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == "{half an edit"
