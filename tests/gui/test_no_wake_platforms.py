"""No face starts a stopped Coder workspace or codespace without an explicit wake: every `workroom` command
(enumerated from the CLI's own parser, so a new command cannot be missed) and every action of the desktop app,
run against a stopped workspace and a stopped codespace, starts nothing; each explicit wake ("Wake and connect",
"Wake and test", "Wake, uninstall and remove", `--wake`, `hosts remove --uninstall --wake`) starts the box exactly once,
through the platform's own start command.

The platforms cannot run here: fake `coder` and `gh` on PATH (tests/fixtures/fake_platforms.py, which names the
public sources each behaviour follows) record every start with its cause and, as the real ones do, start a stopped
box when `--stdio` is asked for one (without `--disable-autostart`). Behind them are the real loopback sshd and
the real agent; the CLI runs as its own process, the app's engine, sessions and widgets are real (offscreen).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from fixtures.fake_platforms import Box, FakePlatform
from gui_helpers import open_dialog, wait_for
from no_wake_recipes import ANSWERS, workroom
from no_wake_recipes import recipes as no_wake_recipes
from workroom.core.connection import ConnectionState
from workroom.core.errors import ExitCode
from workroom.core.hosts import Host, IdentityRef
from workroom.core.provider_specs import spec_for
from workroom.providers.coder import CODER_RULES, CoderProvider
from workroom.providers.codespaces import CODESPACES_RULES, CodespacesProvider
from workroom.ui.app import WorkroomApp
from workroom.ui.host_dialog import AddHostDialog

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow]

LIVE = (ConnectionState.LIVE, ConnectionState.QUIET, ConnectionState.RELEASED)
WINDOW = 8.0
"""The hosts' idle window: the asleep box's state is read again every 2 s (a quarter of it)."""


def stopped_boxes(platform: FakePlatform, sshd: Any) -> None:
    platform.add(Box(name="ws1", platform="coder", state="stopped", ssh_port=sshd.port, ttl=600.0, bump=0.0,
                     kill_uid=sshd.uid))
    platform.add(Box(name="cs1", platform="codespaces", state="Shutdown", ssh_port=sshd.port, ttl=600.0,
                     kill_uid=sshd.uid))


def starts(platform: FakePlatform) -> list[tuple[str, str]]:
    return [(e["box"], e["cause"]) for e in platform.events_of("start")]


def stop(platform: FakePlatform, *names: str) -> None:
    for name in names:
        if platform.box(name)["state"] not in ("stopped", "Shutdown"):
            platform.stop_now(name)


def host_args(sshd: Any, kind: str, box: str) -> list[str]:
    return ["--provider", kind, "--user", sshd.user, "--identity", str(sshd.key_path), "--candidates", "user",
            "--idle-window", str(WINDOW), "--ref", box]



@pytest.mark.timeout(600)
def test_no_cli_command_starts_a_stopped_platform_box_without_wake(sshd: Any, wr_home: Path,
                                                                 fake_platform: FakePlatform) -> None:
    stopped_boxes(fake_platform, sshd)
    recipes = no_wake_recipes("ws1", host_args(sshd, "coder", "ws1"), WINDOW)
    assert workroom("hosts", "add", "cs1", *host_args(sshd, "codespaces", "cs1")).returncode == 0
    assert workroom("hosts", "add", "spare", *host_args(sshd, "codespaces", "cs1")).returncode == 0
    for argv, codes in recipes.values():
        result = workroom(*argv)
        assert result.returncode in codes, (argv, result.returncode, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        assert starts(fake_platform) == [], (argv, starts(fake_platform))
        if codes == ANSWERS:
            assert "ws1 is asleep" in result.stdout
            if argv[0] == "keep":  # nothing to keep on an asleep box: waking it is never suggested
                assert "--wake" not in result.stdout and "Nothing was sent" in result.stdout
            else:
                assert f"`workroom {argv[0]} ws1 --wake`" in result.stdout
    for name in ("ws1", "cs1"):  # the codespace by every command that names a host, too
        for argv in (["connect", name], ["why", name], ["keep", name], ["exclusions", name], ["let-sleep", name]):
            result = workroom(*argv)
            assert "Traceback" not in result.stderr and starts(fake_platform) == [], (argv, result.stderr)
    status = workroom("status")  # a look: the platforms' own lists, no box reached
    assert status.stdout.count("Asleep") == 2, status.stdout
    live = workroom("status", "--live")
    assert live.stdout.count("not woken") == 2, live.stdout
    refused = workroom("hosts", "remove", "ws1", "--uninstall")  # an asleep box's uninstall needs --wake
    assert refused.returncode == ExitCode.ASLEEP and "--uninstall --wake" in refused.stdout, refused
    stdio = [c["argv"] for c in fake_platform.calls if "--stdio" in c["argv"]]
    assert stdio == [], stdio  # no command even opened a tunnel to a stopped box

    # The explicit wakes: each starts the box exactly once, through the platform's own start.
    explicit = [["connect", "ws1", "--wake"], ["why", "ws1", "--wake"], ["keep", "ws1", "--wake"],
                ["exclusions", "ws1", "--wake"], ["connect", "cs1", "--wake"],
                ["hosts", "remove", "ws1", "--uninstall", "--wake"]]
    expected: list[tuple[str, str]] = []
    for argv in explicit:
        stop(fake_platform, "ws1", "cs1")
        result = workroom(*argv)
        assert result.returncode == ExitCode.OK, (argv, result.stdout, result.stderr)
        expected.append(("ws1", "coder start") if argv[1] == "ws1" or argv[2:3] == ["ws1"] else ("cs1", "api start"))
        assert starts(fake_platform) == expected, (argv, starts(fake_platform))
    assert all("--disable-autostart" in c["argv"] for c in fake_platform.calls
               if c["cli"] == "coder" and "--stdio" in c["argv"])


def platform_host(sshd: Any, name: str, kind: str, box: str) -> Host:
    field = spec_for(kind).reference[0].name
    return Host(name=name, provider=kind, user=sshd.user, identity=IdentityRef.file(str(sshd.key_path)),
                agent_candidates="user", idle_window_seconds=WINDOW, reference={field: box})


@pytest.mark.timeout(600)
def test_no_app_action_starts_a_stopped_platform_box_but_the_explicit_wakes(sshd: Any, engine: Any, qtbot: Any,
                                                                           run: Any, fake_platform: FakePlatform
                                                                           ) -> None:
    stopped_boxes(fake_platform, sshd)
    engine.use_provider(CoderProvider(engine.context, spec_for("coder"),
                                      dataclasses.replace(CODER_RULES, read_interval_seconds=1.0)))
    engine.use_provider(CodespacesProvider(engine.context, spec_for("codespaces"),
                                           dataclasses.replace(CODESPACES_RULES, read_interval_seconds=1.0)))
    engine.add_host(platform_host(sshd, "ws1", "coder", "ws1"))
    engine.add_host(platform_host(sshd, "cs1", "codespaces", "cs1"))
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    window, tray = app.window, app.tray

    def state(name: str) -> ConnectionState | None:
        snap = window.model.snapshot(name)
        return None if snap is None else snap.connection.state

    def no_new_start(what: str, *allowed: tuple[str, str]) -> None:
        assert starts(fake_platform) == list(allowed), (what, starts(fake_platform))

    async def scenario() -> None:
        app.start(show_window=True)
        for name in ("ws1", "cs1"):
            await wait_for(lambda n=name: state(n) is ConnectionState.ASLEEP, 20, f"{name} to show Asleep")
        no_new_start("start-up")
        tray.refresh_texts()
        for action in tray.menu.actions():
            if action.text() in ("Open Workroom", "Settings…", "Connect all"):
                action.trigger()
        menu = tray.host_menus["ws1"]
        assert menu.connect_action.text() == "Wake and connect"
        for action in (menu.copy_action, menu.details_action):
            action.trigger()
        window.connect_all_button.click()
        window.select_host("ws1")
        assert window.detail.connect_button.text() == "Wake and connect"
        window.row_menu("ws1")
        window.timeline.refresh_button.click()
        window.settings.apply_button.click()
        await asyncio.sleep(2.0)
        no_new_start("menu, window, settings apply, Connect all")

        # Add a codespace through the dialog: Test connection says asleep and starts nothing; Add leaves it asleep.
        window.open_add_dialog()
        dialog = open_dialog(AddHostDialog)
        dialog.select_provider("codespaces")
        for key, value in (("name", "cs2"), ("user", sshd.user), ("identity", str(sshd.key_path)),
                           ("ref_codespace", "cs1"), ("idle_window_seconds", str(int(WINDOW)))):
            dialog.inputs[key].setText(value)
        dialog.test_button.click()
        await wait_for(lambda: "asleep" in dialog.test_result.text(), 20, "Test connection to say asleep")
        assert dialog.test_button.text() == "Wake and test"
        no_new_start("Test connection")
        dialog.try_accept()
        await wait_for(lambda: state("cs2") is ConnectionState.ASLEEP, 20, "the added cs2 to show Asleep")
        window.select_host("cs2")
        edit = window.open_edit_dialog()
        edit.inputs["idle_window_seconds"].setText(str(int(WINDOW) + 1))
        edit.try_accept()
        await wait_for(lambda: state("cs2") is ConnectionState.ASLEEP, 20, "the edited cs2 to show Asleep")
        confirm = window.confirm_remove()
        assert confirm is not None
        next(b for b in confirm.buttons() if b.objectName() == "remove_only").click()
        await wait_for(lambda: engine.hosts.get("cs2") is None, 10, "cs2 to be removed")
        await asyncio.sleep(2.0)
        no_new_start("add, Test connection, edit, remove only")

        # The explicit wakes, one start each, through the platforms' own start commands.
        window.select_host("ws1")
        window.detail.connect_button.click()  # Wake and connect
        await wait_for(lambda: state("ws1") in LIVE, 90, "ws1 live after Wake and connect")
        no_new_start("Wake and connect", ("ws1", "coder start"))
        probe = window.open_add_dialog()
        probe.select_provider("codespaces")
        for key, value in (("name", "probe"), ("user", sshd.user), ("identity", str(sshd.key_path)),
                           ("ref_codespace", "cs1")):
            probe.inputs[key].setText(value)
        probe.test_button.click()
        await wait_for(lambda: probe.test_button.text() == "Wake and test" and probe.test_button.isEnabled(), 20,
                       "Wake and test to be offered")
        probe.test_button.click()
        await wait_for(lambda: "logged in" in probe.test_result.text(), 90, "Wake and test to log in")
        no_new_start("Wake and test", ("ws1", "coder start"), ("cs1", "api start"))
        probe.reject()
        stop(fake_platform, "ws1")
        await wait_for(lambda: state("ws1") is ConnectionState.ASLEEP, 30, "ws1 stopped again")
        window.select_host("ws1")
        confirm = window.confirm_remove()
        uninstall = next(b for b in confirm.buttons() if b.objectName() == "remove_uninstall")
        assert uninstall.text() == "Wake, uninstall and remove"
        uninstall.click()
        # Longer than the uninstall's own bound (90 s for the command on the box, after the start and the connect),
        # so a slow step ends in the app's own words in the log rather than in this wait.
        await wait_for(lambda: engine.hosts.get("ws1") is None, 150, "ws1 removed and its agent uninstalled")
        no_new_start("Wake, uninstall and remove", ("ws1", "coder start"), ("cs1", "api start"),
                     ("ws1", "coder start"))
        app.request_quit()
        await app.close()
        await asyncio.sleep(1.0)
        no_new_start("quit", ("ws1", "coder start"), ("cs1", "api start"), ("ws1", "coder start"))

    run(scenario(), timeout=500)
    assert all("--disable-autostart" in c["argv"] for c in fake_platform.calls
               if c["cli"] == "coder" and "--stdio" in c["argv"])
