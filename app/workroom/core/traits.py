"""What a provider's boxes do when idle, and how the app reaches them.

The app decides from these traits, never from a provider's name (docs/providers.md): ask mode, quiet
sessions, the badge's "not kept awake" warnings and the outside keep-awake all read them, through the
metering's row (`ProviderTraits.metering`, core.metering).
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workroom.core.metering import IdleMetering, Keeper, MeteringRow, metering_row

DEFAULT_HEARTBEAT_INTERVAL_SECONDS = 60.0
"""The agent's heartbeat cadence on network-metered boxes (docs/agent.md, Heartbeat)."""


class Transport(StrEnum):
    """How the app reaches a host's agent: it decides whether a host is this computer (no address, port, user
    or key file; the window says "this computer") or a machine reached with SSH.

    Whether that SSH goes straight to the box or through a proxy the provider runs (the simulated box's TCP
    proxy, a platform's HTTP tunnel) is the address's and ~/.ssh/config's business: nothing in the app
    decides from it, so it is not a trait.
    """

    LOCAL = "local"
    """The agent's Unix socket on this computer."""
    SSH = "ssh"
    """SSH to the host (honouring ~/.ssh/config, its ProxyJump and ProxyCommand)."""


class ProviderTraits(BaseModel):
    """A provider's declared behaviour. Immutable; a host may override the idle window."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    idle_metering: IdleMetering
    transport: Transport
    idle_window_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """How long the box may be idle before the provider sleeps it; None when unknown."""
    heartbeat_interval_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """The agent heartbeat cadence this provider expects (network metering only)."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        row = metering_row(self.idle_metering)
        if self.heartbeat_interval_seconds is not None and row.keeper is not Keeper.AGENT_HEARTBEAT:
            raise ValueError("only providers kept awake by the agent's heartbeat have a heartbeat interval")
        return self

    @property
    def metering(self) -> MeteringRow:
        """How this provider's boxes sleep (`metering.sleeps`: whether they sleep when idle at all), who keeps a busy
        one awake, and how (core.metering)."""
        return metering_row(self.idle_metering)

    def with_idle_window(self, seconds: float | None) -> ProviderTraits:
        """These traits with a host's own idle window (None keeps the provider's)."""
        if seconds is None:
            return self
        if isinstance(seconds, bool) or not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(f"an idle window must be a positive finite number of seconds, got {seconds!r}")
        return self.model_copy(update={"idle_window_seconds": float(seconds)})

    def with_heartbeat_interval(self, seconds: float) -> ProviderTraits:
        """These traits with a different agent heartbeat (tests and the simulator use short ones)."""
        return ProviderTraits.model_validate({**self.model_dump(), "heartbeat_interval_seconds": seconds})


# The traits the provider rows (core.provider_specs) declare; several rows may share one.
LOCAL_TRAITS = ProviderTraits(idle_metering=IdleMetering.NEVER, transport=Transport.LOCAL)
SSH_TRAITS = ProviderTraits(idle_metering=IdleMetering.NEVER, transport=Transport.SSH)
BOXD_TRAITS = ProviderTraits(
    idle_metering=IdleMetering.NETWORK,
    transport=Transport.SSH,
    heartbeat_interval_seconds=DEFAULT_HEARTBEAT_INTERVAL_SECONDS,
)
SIMBOX_TRAITS = BOXD_TRAITS
REQUEST_METERED_TRAITS = ProviderTraits(idle_metering=IdleMetering.REQUESTS, transport=Transport.SSH)
CODER_TRAITS = ProviderTraits(
    idle_metering=IdleMetering.SESSIONS,
    transport=Transport.SSH,
    idle_window_seconds=3600.0,  # a template's activity bump, 1 h by default: each activity moves the deadline by it
)
CODESPACES_TRAITS = ProviderTraits(
    idle_metering=IdleMetering.SESSIONS,
    transport=Transport.SSH,
    idle_window_seconds=1800.0,  # the idle timeout, 30 min by default (5-240 min by the user's setting)
)
