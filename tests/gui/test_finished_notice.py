""""Your job finished", with a real agent: a span long enough notifies once, a short one does not.

The agent is the real one, started by the app's own session code through the `ssh` stand-in of
test_live_app.py (this computer's agent declaring a provider that never sleeps, `--hold-seconds 1`), inside a
PID namespace of its own (root) so that other work on this machine cannot stretch or split its spans; the
jobs run in the same namespace. Scale: the threshold is 4 s where the app's default is 10 min (1:150), so the
5 s job stands for a 12.5-minute compile and the 1 s job for a 2.5-minute one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from gui_helpers import wait_for
from integration.agent.agentrun import PidNamespace
from test_live_app import NeverSleepsProvider
from workroom.core.app_settings import NoticeSettings
from workroom.core.hosts import Host
from workroom.core.protocol import Verdict
from workroom.core.provider_specs import spec_for
from workroom.ui.app import WorkroomApp
from workroom.ui.notification_delivery import Notice

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow, pytest.mark.root]

BURN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"


class NamespacedSteady(NeverSleepsProvider):
    """The stand-in whose agent (and everything the installer runs) starts inside `namespace`."""

    namespace: PidNamespace

    def python_command(self, host: Host) -> tuple[str, ...]:
        return tuple(self.namespace.argv(sys.executable))


@pytest.fixture
def namespace() -> Iterator[PidNamespace]:
    if os.geteuid() != 0:
        pytest.skip("needs root: a PID namespace")
    ns = PidNamespace()
    yield ns
    ns.close()


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Iterator[Any]:
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


def test_a_long_span_notifies_once_and_a_short_one_does_not(app: Any, engine: Any, run: Any,
                                                             namespace: PidNamespace) -> None:
    provider = NamespacedSteady(engine.context, spec_for("ssh"))
    provider.namespace = namespace
    engine.use_provider(provider)
    short_threshold = NoticeSettings.model_construct(**{**NoticeSettings().model_dump(),
                                                        "finished_after_seconds": 4.0})
    engine.settings = engine.settings.model_copy(update={"notices": short_threshold})
    posted: list[Notice] = []
    post = app.notifications.post
    app.notifications.post = lambda notice: (posted.append(notice), post(notice))
    finished = lambda: [n for n in posted if n.key == "finished:steady"]  # noqa: E731

    def status() -> Any:
        return engine.session("steady").status

    async def job(seconds: float) -> None:
        before = status().last_busy_span
        namespace.popen([sys.executable, "-c", BURN.format(seconds=seconds)])
        await wait_for(lambda: status().verdict is Verdict.BUSY, 15, "the job to make the host busy")
        await wait_for(lambda: status().verdict is Verdict.IDLE and status().last_busy_span != before, 30,
                       "the host to go idle, telling the span")

    async def scenario() -> None:
        app.controller.add_host(Host(name="steady", provider="ssh"))
        await wait_for(lambda: status() is not None and status().verdict is Verdict.IDLE, 40,
                       "the host live and idle")
        await job(5.0)
        await wait_for(lambda: finished(), 5, "the finished notification")
        span = status().last_busy_span
        assert span.reason_class == "cpu" and 4.0 <= span.seconds <= 8.0, span
        (note,) = finished()
        assert note.title == "steady finished"
        assert note.message.startswith("steady finished — running python") and " for " in note.message
        assert "it may sleep now" not in note.message  # this host never sleeps
        await job(1.0)
        assert status().last_busy_span.seconds < 4.0
        assert len(finished()) == 1, [n.message for n in finished()]

    run(scenario(), timeout=120)
