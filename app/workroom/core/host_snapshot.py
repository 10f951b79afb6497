"""What a face (window, tray, command line) shows of one host: the session's state at one moment, published to
every face (sessions/host_session.py makes it; ui/ and cli/ read it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from workroom.core.badge import Badge, badge
from workroom.core.connection import ConnectionInfo
from workroom.core.errors import Face
from workroom.core.hosts import Host
from workroom.core.install_report import InstallReport
from workroom.core.last_known import LastKnown
from workroom.core.metering import Keeper
from workroom.core.prompt_answers import SentAnswer
from workroom.core.protocol import PromptEvent, Status, Verdict
from workroom.core.traits import ProviderTraits


def wants_session(status: Status) -> bool:
    """Whether the agent means to keep the box up now: the only time a session is held where it is activity. A
    stalled agent's last word stands: the session replaces a stalled agent on a busy box (HostSession._on_status), which
    letting go would prevent."""
    if status.verdict is not Verdict.BUSY or status.suppressed:
        return False
    return not status.awake_ceiling_exceeded or status.prompt_pending


def kept_until(status: Status, received_at: float) -> float:
    """Until when the agent means to keep the box up: a pending prompt's deadline, else the moment its awake time
    reaches the ceiling — in ask mode, that plus the question's timeout (the agent asks there and keeps the box up
    until nobody has answered; a box let go at the ceiling itself would sleep in the second before the question
    arrives). `received_at`: when the status arrived, on the clock the answer is wanted on (the wall clock for a
    platform's deadline, the monotonic one for the outside keep-awake)."""
    if status.prompt_pending and status.prompt_deadline is not None:
        return received_at + max(0.0, status.prompt_deadline - status.monotonic)
    if status.awake_ceiling_exceeded:
        return received_at
    asked = status.prompt_timeout_seconds if status.ask_at_ceiling else 0.0
    return received_at + max(0.0, status.ceiling_seconds - status.awake_seconds) + asked


@dataclass(frozen=True)
class HostSnapshot:
    """Everything a face (window, tray, CLI) needs to show one host."""

    host: Host
    traits: ProviderTraits
    connection: ConnectionInfo
    status: Status | None
    prompt: PromptEvent | None
    status_received_at: float | None = None
    install: InstallReport | None = None
    last_answer: SentAnswer | None = None
    """The last answer to a ceiling prompt this engine sent, and from which face (core.prompt_answers)."""
    last_known: LastKnown | None = None
    """The one record of what is known of the host (core.last_known), attached by the engine: what a row
    that is not live shows, and since when an asleep box has slept, across runs and faces."""

    def badge(self, now_monotonic: float | None = None, face: Face = Face.APP) -> Badge:
        return badge(self.status, self.traits, self.connection, now_monotonic=now_monotonic, face=face)

    @property
    def kept_by_this_computer(self) -> bool:
        """This computer holds the box up now, so this computer's own sleep would let it stop (the faces offer to
        hold off this computer's idle sleep, and say so when it slept)."""
        keeper = self.traits.metering.keeper
        match keeper:
            case Keeper.THIS_COMPUTER:
                return self.connection.keepawake_running
            case Keeper.PLATFORM:
                return self.connection.spec.live and self.status is not None and wants_session(self.status)
            case Keeper.AGENT_HEARTBEAT | Keeper.NOTHING_NEEDED:
                return False
            case _:
                assert_never(keeper)
