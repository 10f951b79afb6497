"""The engine and another process writing the same files (an older `workroom`, a hand edit, a second face): every
engine write is applied to the file as it is then, so the other's change is kept; a change found in the files is
taken (`reload_changed_files`), the faces hear of it and the log says so; a file caught half edited is left for
later, never taken as "no hosts". Real files in a temporary home; no host is contacted."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from workroom.agent_bundle import load_agent_bundle
from workroom.core.app_settings import AppSettings
from workroom.core.hosts import Host, HostsFile
from workroom.paths import HOME_ENV, AppPaths, app_paths
from workroom.sessions.engine import Engine
from workroom.sessions.engine_changes import HostsChange, SettingsChange, host_changes
from workroom.storage import load_hosts, load_settings, save_hosts, save_settings, update_hosts

pytestmark = pytest.mark.unit


@pytest.fixture
def paths(tmp_path: Path) -> AppPaths:
    return app_paths({HOME_ENV: str(tmp_path / "home")}).ensure()


@pytest.fixture
def engine(paths: AppPaths) -> Iterator[Engine]:
    made = Engine(paths, load_agent_bundle(paths), hostname="me", auto_reconnect=False)
    yield made
    asyncio.run(made.close())


def behind_its_back(paths: AppPaths, host: Host) -> None:
    """What an older `workroom hosts add` did: read the file, add, write it whole."""
    save_hosts(paths, load_hosts(paths, "me").value.add(host))


def test_a_write_keeps_what_another_process_wrote_meanwhile(engine: Engine, paths: AppPaths) -> None:
    heard: list[HostsChange] = []
    engine.hosts_listeners.append(heard.append)
    behind_its_back(paths, Host(name="box2", provider="ssh", address="10.0.0.2"))
    engine.add_host(Host(name="box1", provider="ssh", address="10.0.0.1"))
    assert load_hosts(paths, "me").value.names() == ["me", "box2", "box1"]
    assert engine.hosts.names() == ["me", "box2", "box1"]
    assert [h.name for h in heard[-1].added] == ["box2", "box1"]  # the other's host shows too


def test_removing_one_host_never_puts_back_or_drops_another(engine: Engine, paths: AppPaths) -> None:
    engine.add_host(Host(name="box1", provider="ssh", address="10.0.0.1", port=22))
    engine.add_host(Host(name="gone", provider="ssh", address="10.0.0.9"))
    # Elsewhere, meanwhile: box1 moved to another port and box2 added (the window did not know yet).
    update_hosts(paths, lambda hosts: hosts.replace(hosts.require("box1").model_copy(update={"port": 2222})))
    behind_its_back(paths, Host(name="box2", provider="ssh", address="10.0.0.2"))
    engine.forget_host("gone")
    stored = load_hosts(paths, "me").value
    assert stored.names() == ["me", "box1", "box2"] and stored.require("box1").port == 2222


def test_an_edit_writes_only_what_the_person_changed(engine: Engine, paths: AppPaths) -> None:
    shown = Host(name="box1", provider="ssh", address="10.0.0.1", port=22, user="ann")
    engine.add_host(shown)
    update_hosts(paths, lambda hosts: hosts.replace(hosts.require("box1").model_copy(update={"port": 2222})))
    asked = shown.model_copy(update={"user": "bob"})  # the dialog, opened before the port changed
    asyncio.run(engine.replace_host("box1", asked, was=shown))
    stored = load_hosts(paths, "me").value.require("box1")
    assert (stored.user, stored.port) == ("bob", 2222)
    assert host_changes(shown, asked) == {"user": "bob"}


def test_a_change_in_the_files_is_taken_heard_and_logged(engine: Engine, paths: AppPaths,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    hosts_heard: list[HostsChange] = []
    settings_heard: list[SettingsChange] = []
    engine.hosts_listeners.append(hosts_heard.append)
    engine.settings_listeners.append(settings_heard.append)
    engine.add_host(Host(name="box1", provider="ssh", address="10.0.0.1"))
    hosts_heard.clear()
    behind_its_back(paths, Host(name="box2", provider="ssh", address="10.0.0.2"))
    update_hosts(paths, lambda hosts: hosts.remove("box1"))
    save_settings(paths, load_settings(paths).value.with_changes({"ceiling_seconds": 1800, "lost_work": False}))
    (paths.state_dir / "last_verdicts.json").write_text(json.dumps({"box2": {"verdict": "BUSY", "seen_at": 1.0}}))
    with caplog.at_level(logging.INFO, logger="workroom.sessions.engine"):
        engine.reload_changed_files()
    assert engine.hosts.names() == ["me", "box2"]
    assert [h.name for h in hosts_heard[0].added] == ["box2"] and hosts_heard[0].removed == ("box1",)
    assert hosts_heard[0].outside
    assert engine.settings.ceiling.ceiling_seconds == 1800 and engine.settings.notices.lost_work is False
    assert settings_heard == [SettingsChange(frozenset({"ceiling_seconds", "lost_work"}), outside=True)]
    assert engine.last_known("box2").reported == "busy"
    said = caplog.text
    assert "hosts.json changed outside the app: added box2; removed box1" in said
    assert "settings.json changed outside the app: ceiling_seconds, lost_work" in said
    engine.reload_changed_files()  # nothing new: nothing heard
    assert len(hosts_heard) == 1 and len(settings_heard) == 1


@pytest.mark.parametrize("content", [b"{half an edit", b"", b'{"version": 1, "hosts": [{"name": "a/b"}]}'])
def test_a_file_caught_half_edited_is_left_for_later(engine: Engine, paths: AppPaths, content: bytes) -> None:
    engine.add_host(Host(name="box1", provider="ssh", address="10.0.0.1"))
    paths.hosts_file.write_bytes(content)
    engine.reload_changed_files()
    assert engine.hosts.names() == ["me", "box1"]
    assert paths.hosts_file.read_bytes() == content  # not moved aside: the editor may be writing it now


def test_settings_changed_here_are_written_over_the_files_as_they_are_then(engine: Engine, paths: AppPaths) -> None:
    """A setting toggled in the pane, saved after a command changed another one: both stay."""
    save_settings(paths, AppSettings().with_changes({"ceiling_seconds": 5400}))
    engine.change_settings({"finished": False})
    engine.use_notice_settings(engine.settings.notices.with_finished_for("box9", False))

    async def save() -> None:
        await engine.save_settings()

    asyncio.run(save())
    stored = load_settings(paths).value
    assert stored.ceiling.ceiling_seconds == 5400  # the command's
    assert stored.notices.finished is False and stored.notices.finished_muted_hosts == ("box9",)  # the pane's
    assert engine.settings == stored


def test_a_price_changes_the_host_and_its_session_goes_on(engine: Engine, paths: AppPaths) -> None:
    heard: list[HostsChange] = []
    engine.add_host(Host(name="box1", provider="ssh", address="10.0.0.1"))
    session = engine.session("box1")
    engine.hosts_listeners.append(heard.append)
    engine.set_hourly_price("box1", 0.5)
    assert engine.sessions["box1"] is session and session.host.hourly_price == 0.5
    assert [h.name for h in heard[0].updated] == ["box1"] and not heard[0].changed
    assert load_hosts(paths, "me").value.require("box1").hourly_price == 0.5


def test_first_start_writes_this_computer_once(paths: AppPaths) -> None:
    engine = Engine(paths, load_agent_bundle(paths), hostname="me", auto_reconnect=False)
    asyncio.run(engine.close())
    assert HostsFile.model_validate_json(paths.hosts_file.read_text()).names() == ["me"]
