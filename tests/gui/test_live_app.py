"""End to end: the window with real agents (this computer's, and one over the real sshd fixture).

Prompt-flow stand-ins: no real sleepable box runs here, so two providers run the real agent on this
computer but declare other traits — `boxd` (sleeps when idle, network heartbeat to a loopback UDP
port) and `ssh` (never sleeps) — and start it with `--test-min-duration 1` so a 2 s ceiling and a 4 s
prompt timeout are accepted. The app under test (engine, sessions, window) is unchanged.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import subprocess
import time
from typing import Any

import pytest
from gui_helpers import OrphanJob, wait_for
from workroom.core.badge import BadgeKind
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host, IdentityRef
from workroom.core.metering import Keeper
from workroom.core.provider_specs import spec_for
from workroom.core.traits import BOXD_TRAITS, SSH_TRAITS, ProviderTraits
from workroom.paths import agent_socket_dir
from workroom.providers.local import LocalProvider
from workroom.remote.agent_install import AgentLayout, ServeOptions
from workroom.ui import row_text
from workroom.ui.app import WorkroomApp
from workroom.ui.host_table_model import Column

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow]

LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Any:
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


@pytest.fixture
def cpu_job() -> Any:
    job = OrphanJob()
    yield job
    job.stop()


def row(app: Any, name: str) -> Any:
    return app.window.model.snapshot(name)


def cell(app: Any, name: str, column: Column) -> str:
    model = app.window.model
    return str(model.data(model.index(model.row_of(name), column)))


def test_this_computer_goes_live_then_busy_with_the_reason(app: Any, engine: Any, run: Any, cpu_job: Any) -> None:
    name = engine.hosts.hosts[0].name
    assert engine.hosts.hosts[0].provider == "local"

    async def scenario() -> None:
        app.start(show_window=True)
        assert app.window.isVisible()
        await wait_for(lambda: row(app, name).connection.state in LIVE and row(app, name).status, 30,
                       "this computer's row to go live")
        assert cell(app, name, Column.CONNECTION).startswith("Live")
        await wait_for(lambda: f"pid {cpu_job.pid}" in row_text.raw_signal_text(row(app, name)), 30,
                       f"the row to name the CPU job (pid {cpu_job.pid}) as the reason")

    run(scenario(), timeout=60)
    assert cell(app, name, Column.BADGE) in ("Busy", "Busy past ceiling")
    assert app.tray.worst_kind in (BadgeKind.BUSY, BadgeKind.BUSY_PAST_CEILING)


class StandInProvider(LocalProvider):
    """The real agent on this computer, declaring `stand_in_traits` (see the module docstring)."""

    stand_in_traits: ProviderTraits = BOXD_TRAITS

    def traits(self, host: Host) -> ProviderTraits:
        return self.stand_in_traits

    def layout(self, host: Host) -> AgentLayout:
        root = self.context.state_dir / host.name
        return AgentLayout(install_dir=str(root / "agent"), state_dir=str(agent_socket_dir(root / "run")))

    def serve_options(self, host: Host) -> ServeOptions:
        extra: tuple[str, ...] = ("--test-min-duration", "1", "--hold-seconds", "1")
        heartbeat = self.stand_in_traits.metering.keeper is Keeper.AGENT_HEARTBEAT
        if heartbeat:
            extra += ("--heartbeat-target", "127.0.0.1:9")
        return ServeOptions(workroom=host.name, candidates="user", heartbeat=heartbeat,
                            heartbeat_interval=1.0 if heartbeat else None,
                            extra=extra)


class SleepyProvider(StandInProvider):
    stand_in_traits = BOXD_TRAITS.with_heartbeat_interval(1.0)


class NeverSleepsProvider(StandInProvider):
    stand_in_traits = SSH_TRAITS


def test_prompt_card_keep_then_unanswered(app: Any, engine: Any, run: Any, cpu_job: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    engine.use_provider(SleepyProvider(engine.context, spec_for("boxd")))
    engine.use_provider(NeverSleepsProvider(engine.context, spec_for("ssh")))
    short = CeilingSettings.model_construct(ceiling_seconds=2.0, prompt_timeout_seconds=4.0, ask_at_ceiling=True)
    engine.settings = engine.settings.model_copy(update={"ceiling": short})
    cards = app.window.cards

    async def scenario() -> None:
        app.controller.add_host(Host(name="sleepy", provider="boxd"))
        app.controller.add_host(Host(name="steady", provider="ssh"))
        card = await wait_for(lambda: cards.cards.get("sleepy"), 40, "a prompt card for the sleepable host")
        assert card.title.text() == "sleepy: keep it awake?"
        assert app.notifications.last_notification is not None
        assert app.notifications.last_notification[0] == "sleepy: keep it awake?"
        first_key = card.key
        card.keep_button.click()
        await wait_for(lambda: "sleepy" not in cards.cards or cards.cards["sleepy"].key != first_key, 15,
                       "Keep awake to answer the card")
        assert (first_key[0], first_key[1]) in cards.answered
        kept = engine.session("sleepy").status
        assert kept is not None and not (kept.prompt_pending and kept.prompt_deadline == first_key[1])
        # The ceiling restarts; the next prompt is a new card, left unanswered this time.
        card2 = await wait_for(lambda: cards.cards.get("sleepy"), 20, "the next prompt's card")
        assert card2.key != first_key
        await wait_for(lambda: row(app, "sleepy").status and row(app, "sleepy").status.suppressed, 20,
                       "the unanswered prompt to time out")
        await wait_for(lambda: "sleepy" not in cards.cards, 5, "the timed-out card to go")

    run(scenario(), timeout=90)
    sleepy = row(app, "sleepy").badge()
    assert sleepy.kind is BadgeKind.BUSY_NOT_KEPT_AWAKE
    assert "nobody answered the prompt" in sleepy.tooltip
    # No longer kept awake, it will sleep: the row says when (here the stand-in names no idle window).
    assert cell(app, "sleepy", Column.BADGE) == "Busy but not kept awake · sleeps within its window"
    steady = row(app, "steady")
    assert steady.status is not None and steady.status.awake_ceiling_exceeded
    assert not steady.status.ask_at_ceiling  # a host that never sleeps is never asked
    assert steady.badge().kind is BadgeKind.BUSY_PAST_CEILING
    assert "steady" not in cards.cards


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_queue_wait() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux schedstat's run_delay), 0 elsewhere."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


@pytest.fixture
def silent_server() -> Any:
    """A TCP port on loopback that accepts and never says a word: a frozen host."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield int(server.getsockname()[1])
    server.close()


@pytest.mark.parametrize(("kind", "words", "wait"), [
    ("refusing", "Nothing accepts SSH connections", 15.0),
    ("silent", "took the connection, but no SSH greeting came", 30.0),
])
def test_dead_host_shows_lost_without_freezing_the_window(app: Any, engine: Any, run: Any, silent_server: int,
                                                          kind: str, words: str, wait: float) -> None:
    port = _closed_port() if kind == "refusing" else silent_server
    lags: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            start, queued = time.perf_counter(), _run_queue_wait()
            await asyncio.sleep(0.01)
            # Lag the app caused (its own work, or a call that blocked the loop), not the time this thread was
            # runnable and waiting for a core: the other tiers keep both cores busy.
            lags.append(time.perf_counter() - start - 0.01 - (_run_queue_wait() - queued))

    async def scenario() -> None:
        stop = asyncio.Event()
        app.start(show_window=True, connect=False)
        await asyncio.sleep(0.3)  # the window's first paint is start-up, not the failing host
        app.controller.add_host(Host(name="dead-box", provider="ssh", address="127.0.0.1", port=port))
        # Ticking from here on: the connect runs as a task on this loop, so anything in it that blocked the
        # loop (a connect, a handshake, the failure's handling, the back-off's next attempt) shows as lag.
        tick = asyncio.ensure_future(ticker(stop))
        await wait_for(lambda: row(app, "dead-box").badge().kind is BadgeKind.OFFLINE, wait,
                       "the dead host to show as offline")
        # Seen as the user sees it, before the back-off (1 s) ends and the next attempt starts.
        assert cell(app, "dead-box", Column.BADGE) == "Offline"
        assert cell(app, "dead-box", Column.CONNECTION).startswith("Lost")
        assert words in row(app, "dead-box").badge().tooltip
        assert app.tray.worst_kind is BadgeKind.OFFLINE
        # Enough samples for a p99 (a refused connect fails in milliseconds): the retry after the back-off
        # runs meanwhile, on the same loop.
        await wait_for(lambda: len(lags) >= 150, 10, "150 loop-lag samples")
        stop.set()
        await tick

    run(scenario(), timeout=wait + 25)
    assert len(lags) >= (300 if kind == "silent" else 150)  # a silent host takes its 10 s handshake timeout
    p99 = statistics.quantiles(lags, n=100, method="inclusive")[98]
    assert p99 < 0.05, f"event loop lag p99 {p99 * 1000:.1f} ms while the host failed ({kind})"


def test_add_host_via_dialog_trust_key_and_connect(app: Any, engine: Any, run: Any, sshd: Any) -> None:
    """The real sshd fixture: the dialog adds the host, the key question is answered in its dialog."""
    from gui_helpers import open_dialog
    from workroom.ui.host_key_dialog import HostKeyDialog

    async def scenario() -> None:
        dialog = app.window.open_add_dialog()
        for key, value in {"name": "sshd-box", "address": sshd.host, "port": str(sshd.port), "user": sshd.user,
                           "identity": str(sshd.key_path)}.items():
            dialog.inputs[key].setText(value)
        dialog.select_provider("ssh")
        dialog.ok_button.click()
        question = await wait_for(lambda: open_dialog(HostKeyDialog), 30, "the host-key dialog")
        assert question.fingerprint.text().startswith("SHA256:")
        question.trust_button.click()
        await wait_for(lambda: row(app, "sshd-box").connection.state in LIVE, 60, "the sshd host to go live")

    run(scenario(), timeout=90)
    assert cell(app, "sshd-box", Column.CONNECTION).startswith("Live")
    assert row(app, "sshd-box").status is not None


def test_passphrase_dialog_asks_once_and_keeps_it_in_the_keyring(app: Any, engine: Any, run: Any, sshd: Any,
                                                                   memory_keyring: Any, tmp_path: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A key with a passphrase the keyring does not know: the dialog asks, the login works, the keyring
    (the in-memory test backend: no desktop keyring runs here) holds it, and the next connect asks nothing."""

    from gui_helpers import open_dialog
    from workroom.credentials import CredentialKey
    from workroom.ui.secret_dialog import SecretDialog

    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    key = tmp_path / "id_locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "open sesame", "-f", str(key)], check=True)
    auth = sshd.home / ".ssh" / "authorized_keys"
    original = auth.read_text()
    auth.write_text(original + (tmp_path / "id_locked.pub").read_text())
    engine.paths.known_hosts_file.write_text(sshd.host_key_line + "\n")

    async def scenario() -> None:
        app.start(show_window=True, connect=False)
        app.controller.add_host(Host(name="locked-box", provider="ssh", address=sshd.host, port=sshd.port,
                                     user=sshd.user, identity=IdentityRef.file(str(key)), agent_candidates="user"))
        dialog = await wait_for(lambda: open_dialog(SecretDialog), 30, "the passphrase dialog")
        dialog.field.setText("open sesame")
        dialog.ok_button.click()
        await wait_for(lambda: row(app, "locked-box").connection.state in LIVE, 60, "the locked host to go live")

    try:
        run(scenario(), timeout=90)
    finally:
        auth.write_text(original)
    assert memory_keyring.get_password("workroom-companion", CredentialKey.passphrase(str(key)).username) \
        == "open sesame"
