"""No face wakes a box without an explicit wake: every `workroom` command (enumerated from the CLI's own argparse
parser, so a new command cannot be missed) and every action of the desktop app (start-up, tray menu, window,
dialogs, settings apply, Connect all, host add/edit/remove, quit), run against asleep simulated boxes, leaves the
simulator's wake record empty, except for the explicit wakes ("Wake and connect", "Wake and test", "Wake,
uninstall and remove", `--wake`, `hosts remove --uninstall`), each of which adds exactly one.

Real parts: the simulator (tools/simbox: real sshd in a network namespace, frozen when asleep, woken by a
connection through its proxy, every wake recorded with its cause), the real agent pushed into the boxes, the CLI
as its own process, and the app's engine, sessions and widgets (offscreen).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.procs import left_behind, our_processes
from fixtures.simboxes import Sim, simulated_boxes
from gui_helpers import open_dialog, wait_for
from no_wake_recipes import ANSWERS, WORKROOM, workroom
from no_wake_recipes import recipes as no_wake_recipes
from workroom.core.connection import ConnectionState
from workroom.core.errors import ExitCode
from workroom.core.hosts import Host, IdentityRef
from workroom.ui.app import WorkroomApp
from workroom.ui.host_dialog import AddHostDialog

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.root, pytest.mark.slow]

WINDOW = 30.0
"""Long enough that a woken box does not fall asleep by itself while a step runs; the test sleeps it."""
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with simulated_boxes(tmp_path_factory.mktemp("sim"), 2, WINDOW) as boxes:
        yield boxes


def box(sim: Sim, name: str) -> dict[str, Any]:
    return next(b for b in sim[1]["boxes"] if b["name"] == name)


def wakes(sim: Sim) -> list[tuple[str, str]]:
    """Every wake either box has recorded: (box, cause)."""
    import simbox

    return [(name, h.get("reason", "")) for name in ("box1", "box2")
            for h in simbox.box_status(name, home=sim[0])["history"] if h["event"] == "wake"]


def asleep(sim: Sim, *names: str) -> None:
    import simbox

    for name in names:
        if simbox.box_status(name, home=sim[0])["state"] != "asleep":
            simbox.sleep(name, home=sim[0])
        assert simbox.box_status(name, home=sim[0])["state"] == "asleep"


def host_args(info: dict[str, Any]) -> list[str]:
    return ["--provider", "simbox", "--host", "127.0.0.1", "--port", str(info["ssh_port"]), "--user", info["user"],
            "--identity", info["client_key"], "--idle-window", str(WINDOW), "--ref", info["health_url"]]



@pytest.mark.timeout(400)  # about 25 CLI processes, each a fresh interpreter: ~70 s here, more on a busy machine
def test_no_cli_command_wakes_an_asleep_box_without_wake(sim: Sim, wr_home: Path) -> None:
    (wr_home / "config").mkdir(parents=True, exist_ok=True)
    known = wr_home / "config" / "known_hosts"
    b1, b2 = box(sim, "box1"), box(sim, "box2")
    known.write_text(b1["host_key_line"] + "\n" + b2["host_key_line"] + "\n")
    asleep(sim, "box1", "box2")
    # Each command without a wake, run against asleep boxes: (argv, the exit codes it may end with).
    recipes = no_wake_recipes("box1", host_args(b1), WINDOW)
    assert workroom("hosts", "add", "box2", *host_args(b2)).returncode == 0
    assert workroom("hosts", "add", "spare", *host_args(b2)).returncode == 0
    done = workroom(*recipes[("hosts", "add")][0])
    assert done.returncode == 0, done.stderr
    for command, (argv, codes) in recipes.items():
        if command == ("hosts", "add"):
            continue
        before = our_processes(wr_home)
        result = workroom(*argv)
        assert result.returncode in codes, (argv, result.returncode, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        assert wakes(sim) == [], (argv, wakes(sim))
        assert left_behind(wr_home, before) == {}, argv  # a command that exits leaves nothing of ours running
        if codes == ANSWERS:
            assert "box1 is asleep" in result.stdout
            if argv[0] == "keep":  # nothing to keep on an asleep box: waking it is never suggested
                assert "--wake" not in result.stdout and "Nothing was sent" in result.stdout
            else:
                assert f"`workroom {argv[0]} box1 --wake`" in result.stdout
    status = workroom("status")  # a look: what is known and the simulator's word, no box reached
    assert "Asleep (since" in status.stdout, status.stdout
    live = workroom("status", "--live")  # a live look connects where it may, and wakes nothing
    assert "Asleep" in live.stdout and "not woken" in live.stdout and wakes(sim) == [], live.stdout
    # Every path of --json is JSON, the asleep answer too; and uninstalling an asleep box needs --wake (or a yes
    # at a terminal: here stdin is not one), else nothing is woken and nothing removed.
    answered = workroom("why", "box1", "--json")
    assert answered.returncode == ExitCode.ASLEEP, answered.stderr
    facts = json.loads(answered.stdout)
    assert facts["asleep"] is True and facts["name"] == "box1"
    assert "`workroom why box1 --wake`" in facts["answer"]["hint"]
    refused = workroom("hosts", "remove", "box1", "--uninstall")
    assert refused.returncode == ExitCode.ASLEEP and "--uninstall --wake" in refused.stdout, refused
    assert "box1" in workroom("hosts", "list").stdout and wakes(sim) == []
    # The live view (also `./dev app` without a display): it watches, and wakes nothing.
    # Ctrl-C as in a terminal. A background job of a non-interactive shell (CI's `./dev test` runs its tiers with
    # `&`) starts with SIGINT ignored, and the child would inherit that: give it back its default.
    watch = subprocess.Popen([*WORKROOM, "status", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, stdin=subprocess.DEVNULL,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(6)
        watch.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        try:
            out, _ = watch.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # what it printed and woke is still checked below
            watch.kill()
            out, _ = watch.communicate(timeout=10)
        ended_after = time.monotonic() - interrupted
    finally:
        if watch.poll() is None:  # never left running past the test, whatever failed
            watch.kill()
            watch.communicate(timeout=10)
    assert "box1" in out and wakes(sim) == []
    # Ctrl-C once took > 30 s here in CI: the interpreter waited for a host's worker thread still in the network
    # (workroom/daemon_threads.py; 0.2 s now). tests/integration/engine/test_status_watch_interrupt.py holds it.
    assert ended_after < 5, f"the live view took {ended_after:.1f} s to end after Ctrl-C"

    # The explicit wakes: each adds exactly one to the record.
    explicit = [["connect", "box1", "--wake"], ["why", "box1", "--wake"], ["keep", "box1", "--wake"],
                ["exclusions", "box1", "--wake"], ["hosts", "remove", "box1", "--uninstall", "--wake"]]
    for n, argv in enumerate(explicit, start=1):
        asleep(sim, "box1")
        if argv[0] == "why":  # asleep again, answered from what the app now knows of it
            answered = workroom("why", "box1")
            assert answered.returncode == ExitCode.ASLEEP
            line = answered.stdout.strip()
            assert line.startswith("box1 is asleep (since ") and "; last known " in line, line
            assert line.endswith("; `workroom why box1 --wake` to wake it and read its record."), line
        result = workroom(*argv)
        assert result.returncode == ExitCode.OK, (argv, result.stdout, result.stderr)
        assert wakes(sim) == [("box1", "proxy connect")] * n, (argv, wakes(sim))
    assert wakes(sim).count(("box2", "proxy connect")) == 0


def simbox_host(info: dict[str, Any], name: str | None = None) -> Host:
    return Host(name=name or info["name"], provider="simbox", address="127.0.0.1", port=info["ssh_port"],
                user=info["user"], identity=IdentityRef.file(info["client_key"]), idle_window_seconds=WINDOW,
                provider_ref=info["health_url"])


@pytest.mark.timeout(400)
def test_no_app_action_wakes_an_asleep_box_but_the_explicit_wakes(sim: Sim, engine: Any, qtbot: Any,
                                                                  run: Any) -> None:
    import simbox

    with engine.paths.known_hosts_file.open("a") as known:
        for info in sim[1]["boxes"]:
            known.write(info["host_key_line"] + "\n")
    asleep(sim, "box1", "box2")
    engine.add_host(simbox_host(box(sim, "box1")))
    before = len(wakes(sim))
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    window, tray = app.window, app.tray

    def state(name: str) -> ConnectionState | None:
        snap = window.model.snapshot(name)
        return None if snap is None else snap.connection.state

    def no_new_wake(what: str, allowed: int = 0) -> None:
        assert len(wakes(sim)) == before + allowed, (what, wakes(sim))

    async def quiet(seconds: float = 1.0) -> None:
        await asyncio.sleep(seconds)  # room for a wrongly started connect to reach the box

    async def scenario() -> None:
        nonlocal before
        app.start(show_window=True)  # start-up connects every host in the background
        await wait_for(lambda: state("box1") is ConnectionState.ASLEEP, 20, "box1 to show Asleep")
        no_new_wake("start-up")
        tray.refresh_texts()  # the menu opening
        for action in tray.menu.actions():
            if action.text() in ("Open Workroom", "Settings…", "Connect all"):
                action.trigger()
        menu = tray.host_menus["box1"]
        assert menu.connect_action.text() == "Wake and connect"
        for action in (menu.copy_action, menu.details_action):
            action.trigger()
        window.connect_all_button.click()
        window.select_host("box1")
        assert window.detail.connect_button.text() == "Wake and connect"
        window.row_menu("box1")  # built, not chosen
        window.timeline.refresh_button.click()
        window.timeline.price.setValue(1.5)
        window.timeline.price.editingFinished.emit()
        ask = window.settings.editors["ask_at_ceiling"].check
        ask.setChecked(not ask.isChecked())
        window.settings.apply_button.click()
        await quiet(2.0)
        no_new_wake("menu, window, settings apply, Connect all")

        # Add a host through the dialog: Test connection says asleep and does not log in; Add leaves it asleep.
        window.open_add_dialog()
        dialog = open_dialog(AddHostDialog)
        b2 = box(sim, "box2")
        dialog.select_provider("simbox")
        for key, value in (("name", "box2"), ("address", "127.0.0.1"), ("port", str(b2["ssh_port"])),
                           ("user", b2["user"]), ("identity", b2["client_key"]), ("ref_health_url", b2["health_url"]),
                           ("idle_window_seconds", str(int(WINDOW)))):
            dialog.inputs[key].setText(value)
        dialog.test_button.click()
        await wait_for(lambda: "asleep" in dialog.test_result.text(), 20, "Test connection to say asleep")
        assert dialog.test_button.text() == "Wake and test"
        no_new_wake("Test connection")
        dialog.try_accept()
        await wait_for(lambda: state("box2") is ConnectionState.ASLEEP, 20, "the added box2 to show Asleep")
        # Edit host: saved, reconnected without a wake.
        window.select_host("box2")
        edit = window.open_edit_dialog()
        edit.inputs["idle_window_seconds"].setText(str(int(WINDOW) + 1))
        edit.try_accept()
        await wait_for(lambda: state("box2") is ConnectionState.ASLEEP, 20, "the edited box2 to show Asleep")
        # Remove only (no uninstall): nothing reaches the box.
        app.controller.add_host(simbox_host(b2, "spare"))
        await wait_for(lambda: state("spare") is ConnectionState.ASLEEP, 20, "the added spare to show Asleep")
        window.select_host("spare")
        confirm = window.confirm_remove()
        assert confirm is not None
        only = next(b for b in confirm.buttons() if b.objectName() == "remove_only")
        assert next(b for b in confirm.buttons() if b.objectName() == "remove_uninstall").text() == \
            "Wake, uninstall and remove"
        only.click()
        await wait_for(lambda: engine.hosts.get("spare") is None, 10, "spare to be removed")
        await quiet(2.0)
        no_new_wake("add, Test connection, edit, remove only")

        # The explicit wakes, one each.
        window.select_host("box1")
        window.detail.connect_button.click()  # Wake and connect
        await wait_for(lambda: state("box1") in LIVE, 60, "box1 live after Wake and connect")
        no_new_wake("Wake and connect", 1)
        edit_again = window.open_add_dialog()
        edit_again.select_provider("simbox")
        for key, value in (("name", "probe"), ("address", "127.0.0.1"), ("port", str(b2["ssh_port"])),
                           ("user", b2["user"]), ("identity", b2["client_key"]), ("ref_health_url", b2["health_url"])):
            edit_again.inputs[key].setText(value)
        edit_again.test_button.click()
        await wait_for(lambda: edit_again.test_button.text() == "Wake and test"
                       and edit_again.test_button.isEnabled(), 20, "Wake and test to be offered")
        edit_again.test_button.click()
        await wait_for(lambda: "logged in" in edit_again.test_result.text(), 60, "Wake and test to log in")
        no_new_wake("Wake and test", 2)
        edit_again.reject()
        simbox.sleep("box2", home=sim[0])
        await wait_for(lambda: state("box2") is ConnectionState.ASLEEP, 30, "box2 asleep again")
        window.select_host("box2")
        confirm = window.confirm_remove()
        uninstall = next(b for b in confirm.buttons() if b.objectName() == "remove_uninstall")
        assert uninstall.text() == "Wake, uninstall and remove"
        uninstall.click()
        await wait_for(lambda: engine.hosts.get("box2") is None, 60, "box2 removed and its agent uninstalled")
        no_new_wake("Wake, uninstall and remove", 3)
        asleep(sim, "box1")
        await wait_for(lambda: state("box1") is ConnectionState.ASLEEP, 30, "box1 asleep again")
        app.request_quit()
        await app.close()  # quit: every session closed
        await quiet(1.0)
        no_new_wake("quit", 3)

    run(scenario(), timeout=300)


@pytest.mark.parametrize("health_url", ["http://127.0.0.1:9/v1/boxes/box2", None],
                         ids=["provider unreadable", "provider cannot tell"])
def test_test_connection_on_a_box_whose_provider_cannot_say_asks_before_it_may_wake_it(
        sim: Sim, engine: Any, qtbot: Any, run: Any, health_url: str | None) -> None:
    """A sleepable box whose state cannot be read (its health page refuses; a request-metered platform, which
    cannot tell without waking): Test connection says it may be asleep, tests nothing, and offers Wake and test."""
    asleep(sim, "box2")
    b2 = box(sim, "box2")
    before = len(wakes(sim))
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)

    async def scenario() -> None:
        app.start(connect=False, show_window=True)
        dialog = app.window.open_add_dialog()
        if health_url is None:
            dialog.select_provider("request-metered")
            fields = (("ref_proxy_url", "http://127.0.0.1:9/"),)
        else:
            dialog.select_provider("simbox")
            fields = (("ref_health_url", health_url),)
        for key, value in (("name", "box2"), ("address", "127.0.0.1"), ("port", str(b2["ssh_port"])),
                           ("user", b2["user"]), ("identity", b2["client_key"]), *fields):
            dialog.inputs[key].setText(value)
        dialog.test_button.click()
        await wait_for(lambda: "may be asleep" in dialog.test_result.text(), 20, "Test connection to say so")
        words = dialog.test_result.text()
        assert "not tested" in words and "Wake and test" in words, words
        assert dialog.test_button.text() == "Wake and test"
        from workroom.ui.styles import ERROR, ROLE_PROPERTY

        assert dialog.test_result.property(ROLE_PROPERTY) != ERROR  # asleep, not tested: a state, not a failure
        await asyncio.sleep(1.0)
        assert len(wakes(sim)) == before, wakes(sim)
        dialog.reject()

    try:
        run(scenario(), timeout=60)
    finally:
        app.window.cards.timer.stop()
