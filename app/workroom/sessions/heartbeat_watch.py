"""Reads the provider's idle clock while the host is busy and kept awake, and publishes the proof.

The judging is pure (core.heartbeat_proof); this is its loop on the session's event loop. Reads are few:
the next one is due just when the clock would pass one heartbeat interval plus the margin if nothing reset
it, so a missed heartbeat is noticed in time and a healthy one costs one read per interval or so. The read
goes to the provider (its API or status page), never over the box's wire, so it neither wakes the box nor
counts as activity. See docs/providers.md, "Is the heartbeat seen?".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import assert_never

from workroom.core.heartbeat_proof import (
    CANNOT_READ,
    OWN_TRAFFIC_SLACK_SECONDS,
    HeartbeatProof,
    IdleClockReading,
    ProofState,
    judge,
    next_read_in,
    window_too_short,
)
from workroom.core.keepawake import KeepAwakePolicy
from workroom.core.metering import Keeper, Proof
from workroom.core.protocol import Status, Verdict
from workroom.core.traits import ProviderTraits

NOT_THE_HEARTBEAT = ("Not confirmed: the activity the provider last saw was not the agent's heartbeat (the box's "
                     "own traffic, or a person's ssh); the next reading will tell.")
NOT_ASKED_YET = "Not known yet: the next reading will tell whether the provider sees the heartbeat."
UNREADABLE_RETRY_SECONDS = 30.0
"""A provider that cannot be read now is asked again this much later (it may be a passing failure)."""


def keep_awake_interval(traits: ProviderTraits, status: Status, *, outside_running: bool) -> float | None:
    """The keep-awake's period to judge against, or None when nothing here keeps the host awake: the agent's
    heartbeat, or this computer's polls while they run (the metering's keeper, core.metering). Only where the
    row's proof is the provider's idle clock: a platform's stop time is read by its own keeper
    (sessions/platform_keeper.py), and a box that never sleeps has nothing to prove."""
    if traits.metering.proof is not Proof.IDLE_CLOCK or status.verdict is not Verdict.BUSY or status.suppressed:
        return None
    keeper = traits.metering.keeper
    match keeper:
        case Keeper.AGENT_HEARTBEAT:
            keep = status.keep_awake
            if keep is None or not keep.enabled or keep.error or status.asserting is False:
                return None  # the badge already says why it is not kept awake
            return keep.interval_seconds
        case Keeper.THIS_COMPUTER:
            if not outside_running:
                return None
            return KeepAwakePolicy.new(idle_window_seconds=traits.idle_window_seconds).interval_seconds
        case Keeper.PLATFORM | Keeper.NOTHING_NEEDED:
            return None  # no row has these with the idle clock as proof; kept for a row that would
        case _:
            assert_never(keeper)


class HeartbeatWatch:
    """One proof loop. `stop()` (or dropping it with the session's teardown) ends it."""

    def __init__(self, read: Callable[[], Awaitable[IdleClockReading | None]], *, interval_seconds: float,
                 window_seconds: float | None, own_traffic_at: Callable[[], float | None],
                 on_proof: Callable[[HeartbeatProof], None], clock: Callable[[], float] = time.monotonic,
                 confirm: Callable[[HeartbeatProof], Awaitable[bool | None]] | None = None,
                 name: str = "heartbeat-watch") -> None:
        self.interval_seconds = interval_seconds
        self.proof: HeartbeatProof | None = None
        self._read = read
        self._window = window_seconds
        self._own_traffic_at = own_traffic_at
        self._on_proof = on_proof
        self._clock = clock
        self._confirm = confirm
        self._confirmed_reset: float | None = None
        self.reads = 0
        self._started = clock()
        self.task = asyncio.get_running_loop().create_task(self._run(), name=name)

    def stop(self) -> None:
        self.task.cancel()

    def _publish(self, proof: HeartbeatProof) -> None:
        self.proof = proof
        self._on_proof(proof)

    async def _run(self) -> None:
        if self._window is not None:
            short = window_too_short(self._window, self.interval_seconds)
            if short is not None:
                self._publish(short)  # nothing to read: a miss could not be noticed before the box sleeps
                return
        while True:
            reading = await self._read()
            self.reads += 1
            if reading is None:
                self._publish(CANNOT_READ)
                await asyncio.sleep(max(UNREADABLE_RETRY_SECONDS, self.interval_seconds))
                continue
            # A reset from before this watch began (a connect, the first keep-awake sent with the status that
            # started it) proves nothing about the keep-awake: count the start as our own traffic.
            own = max(self._own_traffic_at() or self._started, self._started)
            proof = judge(reading, interval_seconds=self.interval_seconds, own_traffic_at=own, previous=self.proof)
            fresh = proof.last_seen_at is not None and proof.last_seen_at > own + OWN_TRAFFIC_SLACK_SECONDS
            if proof.state is ProofState.CONFIRMED and self._confirm is not None and fresh \
                    and proof.last_seen_at != self._confirmed_reset:
                # The clock shows activity nothing of ours explains: the agent's heartbeat, or a job's traffic?
                # (and is the agent ticking at all?) Asked once per reset, right after the reading.
                answer = await self._confirm(proof)
                if answer is None:
                    return  # frozen: the session closes the link, and this watch with it
                if answer:
                    self._confirmed_reset = proof.last_seen_at
                else:
                    proof = proof.model_copy(update={"state": ProofState.UNCONFIRMED, "why": NOT_THE_HEARTBEAT})
            elif proof.state is ProofState.CONFIRMED and self._confirm is not None \
                    and self._confirmed_reset is None:
                proof = proof.model_copy(update={"state": ProofState.UNCONFIRMED, "why": NOT_ASKED_YET})
            self._publish(proof)
            if proof.window_seconds is not None and window_too_short(proof.window_seconds,
                                                                     self.interval_seconds) is not None:
                return
            await asyncio.sleep(next_read_in(proof, interval_seconds=self.interval_seconds, now=self._clock()))
