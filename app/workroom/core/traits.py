"""What a provider's boxes do when idle, and how the app reaches them.

The app decides from these traits, never from a provider's name (docs/providers.md): ask mode, quiet
sessions, the badge's "not kept awake" warnings and the outside keep-awake all read them.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_HEARTBEAT_INTERVAL_SECONDS = 60.0
"""The agent's heartbeat cadence on network-metered boxes (docs/agent.md, Heartbeat)."""


class IdleMetering(StrEnum):
    """What the provider counts as activity when deciding to put a box to sleep."""

    NETWORK = "network"
    """Any packet on the box's link (boxd, the simulated box): the agent's heartbeat keeps it up."""
    REQUESTS = "requests"
    """Only inbound requests through the provider's proxy: only a caller outside keeps it up."""
    NEVER = "never"
    """The box never sleeps on its own."""


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

    sleeps_when_idle: bool
    idle_metering: IdleMetering
    transport: Transport
    idle_window_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """How long the box may be idle before the provider sleeps it; None when unknown."""
    heartbeat_interval_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """The agent heartbeat cadence this provider expects (network metering only)."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.sleeps_when_idle == (self.idle_metering is IdleMetering.NEVER):
            raise ValueError(
                "a provider sleeps when idle exactly when it meters idleness (network or requests); "
                f"got sleeps_when_idle={self.sleeps_when_idle} with idle_metering={self.idle_metering.value}"
            )
        if self.heartbeat_interval_seconds is not None and self.idle_metering is not IdleMetering.NETWORK:
            raise ValueError("only network-metered providers have an agent heartbeat interval")
        return self

    @property
    def agent_keeps_awake(self) -> bool:
        """The far-side agent's heartbeat is what keeps the box awake (network metering)."""
        return self.idle_metering is IdleMetering.NETWORK

    @property
    def needs_outside_keep_awake(self) -> bool:
        """Only a caller outside the box (this app's KeepAwake) can keep it awake (request metering)."""
        return self.idle_metering is IdleMetering.REQUESTS

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
LOCAL_TRAITS = ProviderTraits(
    sleeps_when_idle=False, idle_metering=IdleMetering.NEVER, transport=Transport.LOCAL
)
SSH_TRAITS = ProviderTraits(sleeps_when_idle=False, idle_metering=IdleMetering.NEVER, transport=Transport.SSH)
BOXD_TRAITS = ProviderTraits(
    sleeps_when_idle=True,
    idle_metering=IdleMetering.NETWORK,
    transport=Transport.SSH,
    heartbeat_interval_seconds=DEFAULT_HEARTBEAT_INTERVAL_SECONDS,
)
SIMBOX_TRAITS = BOXD_TRAITS
REQUEST_METERED_TRAITS = ProviderTraits(
    sleeps_when_idle=True,
    idle_metering=IdleMetering.REQUESTS,
    transport=Transport.SSH,
)
