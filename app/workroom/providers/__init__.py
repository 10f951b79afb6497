"""One module per provider; `make_provider` picks by the host's provider kind."""

from __future__ import annotations

from workroom.core.traits import UnknownProviderError
from workroom.providers.base import Provider, ProviderContext


def make_provider(kind: str, context: ProviderContext) -> Provider:
    from workroom.providers import ssh_family
    from workroom.providers.local import LocalProvider
    from workroom.providers.request_metered import RequestMeteredProvider
    from workroom.providers.simbox import SimboxProvider

    classes: dict[str, type[Provider]] = {
        LocalProvider.kind: LocalProvider,
        SimboxProvider.kind: SimboxProvider,
        RequestMeteredProvider.kind: RequestMeteredProvider,
        **ssh_family.PROVIDERS,
    }
    if kind not in classes:
        raise UnknownProviderError(kind)
    return classes[kind](context)
