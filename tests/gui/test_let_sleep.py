"""Let it sleep is an answer the agent acts on at once: the card's button and the tray's entry send `let_sleep`
over the live link, and the real agent publishes IDLE (suppressed, `let_sleep`) long before its prompt timeout.

Stand-in: no sleepable cloud box runs here, so `PromptingProvider` runs the real agent on this computer with a
sleepable provider's traits (boxd) and the agent's test-only lower bound, so its ceiling can be 2 s and a prompt
comes quickly; the prompt timeout stays ten minutes. Engine, sessions, cards and tray are the app's own. The
same answer on a real simulated box, timed from the click to the box asleep: tests/gui/test_let_sleep_simbox.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from gui_helpers import OrphanJob, wait_for
from workroom.core.ceiling import CeilingSettings
from workroom.core.hosts import Host
from workroom.core.protocol import Verdict
from workroom.core.provider_specs import spec_for
from workroom.core.traits import BOXD_TRAITS, ProviderTraits
from workroom.paths import agent_socket_dir
from workroom.providers.base import BoxState
from workroom.providers.local import LocalProvider
from workroom.remote.agent_install import AgentLayout, ServeOptions
from workroom.ui.app import WorkroomApp

pytestmark = [pytest.mark.gui, pytest.mark.integration]

PROMPT_TIMEOUT = 600.0


class PromptingProvider(LocalProvider):
    kind = "boxd"

    def traits(self, host: Host) -> ProviderTraits:
        return BOXD_TRAITS.with_heartbeat_interval(1.0).with_idle_window(30.0)

    def layout(self, host: Host) -> AgentLayout:
        root = self.context.state_dir / host.name
        return AgentLayout(install_dir=str(root / "agent"), state_dir=str(agent_socket_dir(root / "run")))

    def serve_options(self, host: Host) -> ServeOptions:
        return ServeOptions(workroom=host.name, candidates="user", heartbeat=True, heartbeat_interval=1.0,
                            extra=("--heartbeat-target", "127.0.0.1:9", "--test-min-duration", "1",
                                   "--hold-seconds", "1"))

    async def box_state(self, host: Host) -> BoxState:
        return BoxState.AWAKE


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Any:
    engine.use_provider(PromptingProvider(engine.context, spec_for("boxd")))
    # Below the app's own 30 s bound on purpose (the agent runs with its test-only bound): a prompt in seconds.
    engine.settings = engine.settings.model_copy(update={"ceiling": CeilingSettings.model_construct(
        ceiling_seconds=2.0, prompt_timeout_seconds=PROMPT_TIMEOUT, ask_at_ceiling=True)})
    engine.add_host(Host(name="render", provider="boxd"))
    job = OrphanJob(["sleep", "300"])  # work: a job waiting in a timer sleep, outside the app's tree
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()
    job.stop()


def status(app: Any) -> Any:
    return app.window.model.snapshot("render").status


@pytest.mark.parametrize("where", ["card", "tray"])
def test_let_it_sleep_stops_keeping_it_awake_now(app: Any, run: Any, where: str) -> None:
    async def scenario() -> None:
        app.start(show_window=True)
        await wait_for(lambda: "render" in app.window.cards.cards, 45, "the ceiling prompt's card")
        assert "render" in app.tray.prompt_actions and status(app).verdict is Verdict.BUSY
        clicked = time.monotonic()
        if where == "card":
            app.window.cards.cards["render"].dismiss_button.click()
        else:
            app.tray.prompt_actions["render"][2].trigger()
        await wait_for(lambda: status(app).let_sleep, 10, "the agent's let_sleep answer")
        answered = time.monotonic() - clicked
        now = status(app)
        assert now.verdict is Verdict.IDLE and now.suppressed and not now.prompt_pending
        assert now.classifier_verdict is Verdict.BUSY  # the work goes on; only the keep-awake stopped
        assert answered < 5 < PROMPT_TIMEOUT
        assert "render" not in app.window.cards.cards and "render" not in app.tray.prompt_actions
        assert not app.notifications.showing("prompt:render") and "needs an answer" not in app.tray.summary.text()
        tooltip = app.window.model.snapshot("render").badge().tooltip
        assert "nobody answered" not in tooltip and "let it sleep" in tooltip.lower(), tooltip

    run(scenario(), timeout=90)
