"""The providers registry: each row of core.provider_specs names the class that implements it here."""

from __future__ import annotations

import importlib

from workroom.core.provider_specs import ProviderSpec, spec_for
from workroom.providers.base import Provider, ProviderContext


def provider_class(spec: ProviderSpec) -> type[Provider]:
    """The class a provider row names (`module:Class` under workroom.providers)."""
    module_name, _, class_name = spec.implementation.partition(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Provider)):
        raise TypeError(f"provider {spec.kind!r} names {spec.implementation!r}, which is not a Provider class")
    return cls


def make_provider(kind: str, context: ProviderContext) -> Provider:
    """The provider for hosts of `kind` (UnknownProviderError for a kind no row declares)."""
    spec = spec_for(kind)
    return provider_class(spec)(context, spec)
