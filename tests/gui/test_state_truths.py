"""What the window says is true: Connect all never wakes a sleeping box, only "Wake and connect" on one host
does, and rows that are not live do not show a live verdict.

Stand-in: no sleepable cloud box runs here, so `DozingProvider` runs the real agent on this computer and
answers the provider's "is it asleep?" from a flag the test sets; opening a shell while that flag says
asleep counts as a wake (as connecting to a real boxd VM would). The engine, sessions and window are the
app's own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gui_helpers import wait_for
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host
from workroom.core.provider_specs import spec_for
from workroom.core.traits import BOXD_TRAITS, ProviderTraits
from workroom.paths import agent_socket_dir
from workroom.providers.base import BoxState
from workroom.providers.local import LocalProvider
from workroom.remote.agent_install import AgentLayout, ServeOptions
from workroom.remote.host_shell import HostShell
from workroom.ui.app import WorkroomApp

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow]

LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


class DozingProvider(LocalProvider):
    asleep = True
    wakes = 0
    reads = 0

    idle_window = 8.0

    def traits(self, host: Host) -> ProviderTraits:
        return BOXD_TRAITS.with_heartbeat_interval(1.0).with_idle_window(self.idle_window)

    def layout(self, host: Host) -> AgentLayout:
        root = self.context.state_dir / host.name
        return AgentLayout(install_dir=str(root / "agent"), state_dir=str(agent_socket_dir(root / "run")))

    def serve_options(self, host: Host) -> ServeOptions:
        return ServeOptions(workroom=host.name, candidates="user", heartbeat=True, heartbeat_interval=1.0,
                            extra=("--heartbeat-target", "127.0.0.1:9"))

    async def box_state(self, host: Host) -> BoxState:
        type(self).reads += 1
        return BoxState.ASLEEP if type(self).asleep else BoxState.AWAKE

    def open_shell(self, host: Host) -> HostShell:
        if type(self).asleep:
            type(self).wakes += 1
            type(self).asleep = False
        return super().open_shell(host)


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Any:
    DozingProvider.asleep, DozingProvider.wakes, DozingProvider.reads = True, 0, 0
    engine.use_provider(DozingProvider(engine.context, spec_for("boxd")))
    engine.add_host(Host(name="nightly", provider="boxd"))
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


def state(app: Any, name: str) -> ConnectionState:
    return app.window.model.snapshot(name).connection.state


def test_connect_all_leaves_an_asleep_box_asleep_and_wake_and_connect_wakes_it(app: Any, engine: Any,
                                                                              run: Any) -> None:
    local = engine.hosts.hosts[0].name
    window = app.window

    async def scenario() -> None:
        app.start(show_window=True)
        await wait_for(lambda: state(app, "nightly") is ConnectionState.ASLEEP, 20, "nightly to show Asleep")
        await wait_for(lambda: state(app, local) in LIVE, 30, "this computer to go live")
        window.connect_all_button.click()
        assert window.notice.isVisible()
        assert "nightly" in window.notice.text() and "Wake and connect" in window.notice.text()
        await asyncio.sleep(1.5)  # room for a wrongly started connect to reach the provider
        assert state(app, "nightly") is ConnectionState.ASLEEP
        assert DozingProvider.wakes == 0
        window.select_host("nightly")
        assert window.detail.connect_button.text() == "Wake and connect"
        assert window.detail.connect_button.isEnabled()
        window.detail.connect_button.click()
        await wait_for(lambda: state(app, "nightly") in LIVE, 40, "nightly to go live after Wake and connect")
        assert DozingProvider.wakes == 1

    run(scenario(), timeout=90)


def test_a_box_woken_outside_the_app_goes_live_within_a_fraction_of_its_idle_window(app: Any, run: Any) -> None:
    """The user's own ssh wakes the box (the flag flips, the app does nothing); the app reads the state again
    at a quarter of the 8 s idle window and connects quietly, without ever waking it itself."""

    async def scenario() -> None:
        app.start(show_window=True)
        await wait_for(lambda: state(app, "nightly") is ConnectionState.ASLEEP, 20, "nightly to show Asleep")
        reads_before = DozingProvider.reads
        await asyncio.sleep(4.5)  # about two re-reads at 2 s: still asleep, still not woken
        assert state(app, "nightly") is ConnectionState.ASLEEP
        assert 1 <= DozingProvider.reads - reads_before <= 4
        DozingProvider.asleep = False  # woken outside the app
        woken_at = asyncio.get_running_loop().time()
        await wait_for(lambda: state(app, "nightly") in LIVE, 30, "nightly to go live on its own")
        assert asyncio.get_running_loop().time() - woken_at < DozingProvider.idle_window + 15
        assert DozingProvider.wakes == 0

    run(scenario(), timeout=90)
