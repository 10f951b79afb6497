"""Every provider, declared once: its kind, traits, reference fields and the class that implements it.

One `ProviderSpec` row per provider. The providers registry makes the row's class, `Host` checks a host's
reference against the row's fields, the add-host dialog and `workroom hosts add --ref` ask for those fields
with the row's words, and docs/providers.md lists the same rows (a test holds all of them together:
tests/unit/test_provider_specs.py). Adding a provider is one row here plus its module
(docs/architecture.md, "Adding a provider").

The class is named by its import path: core imports nothing of the providers layer, and the registry
(`workroom.providers.make_provider`) resolves the name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from workroom.core.errors import UserError
from workroom.core.platform_names import coder_workspace_problem, codespace_problem
from workroom.core.traits import (
    BOXD_TRAITS,
    CODER_TRAITS,
    CODESPACES_TRAITS,
    DEFAULT_HEARTBEAT_INTERVAL_SECONDS,
    LOCAL_TRAITS,
    REQUEST_METERED_TRAITS,
    SIMBOX_TRAITS,
    SSH_TRAITS,
    ProviderTraits,
    Transport,
)

MAX_REFERENCE_LENGTH = 255


class ReferenceKind(StrEnum):
    """What a reference field holds, and so how it is checked."""

    WORD = "word"
    """A name without spaces (a machine name)."""
    URL = "url"
    """An http:// or https:// address."""


_URL = re.compile(r"https?://[^/\s?#]+(?:[/?#]\S*)?", re.IGNORECASE)


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


@dataclass(frozen=True)
class ReferenceField:
    """One piece of the provider's own reference to a machine (a machine name, a health page's URL)."""

    name: str
    """Its key in `Host.reference` and in hosts.json; `--ref NAME=VALUE` on the command line."""
    label: str
    """What it is, in a few words: the dialog's placeholder and its error messages ("health page URL")."""
    help: str
    """One or two sentences under the field: what it is for, and an example."""
    kind: ReferenceKind = ReferenceKind.WORD
    required: bool = False
    """A new host of this provider cannot work without it (loading an older hosts file never refuses it)."""
    legacy_fragment: str | None = None
    """How an older hosts file wrote this field inside the one-string `provider_ref`: `FIRST#<fragment>=VALUE`."""
    box_rule: Callable[[str], str | None] | None = None
    """The platform's naming rule for the box this field names (core.platform_names: why a name breaks it, or
    None), checked when a host is added or edited and before each use, never when the hosts file loads."""
    defaults_to_host_name: bool = False
    """Left empty, the host's own name stands for it (and so is held to `box_rule`)."""

    def box_name(self, host_name: str, reference: Mapping[str, str]) -> str:
        """The box's name this field gives (or the host's name), ValueError with words when it breaks the rule."""
        value = self.of(reference) or (host_name if self.defaults_to_host_name else "")
        problem = self.box_rule(value) if self.box_rule is not None else None
        if problem is not None:
            source = "" if self.of(reference) else " (the host's name, used when none is given)"
            raise ValueError(f"the {self.label} {value!r}{source} {problem}")
        return value

    def check(self, value: str) -> str:
        """`value` if this field can hold it, else ValueError with a sentence naming the field."""
        if not isinstance(value, str) or not value or value != value.strip() or len(value) > MAX_REFERENCE_LENGTH \
                or any(ch.isspace() for ch in value) or _has_control(value):
            raise ValueError(f"the {self.label} must be one word without spaces, at most "
                             f"{MAX_REFERENCE_LENGTH} characters (got {value!r})")
        if self.kind is ReferenceKind.URL and not _URL.fullmatch(value):
            raise ValueError(f"the {self.label} must be an http:// or https:// address (got {value!r})")
        return value

    def of(self, reference: Mapping[str, str]) -> str | None:
        """This field's value in a host's reference, or None when it is not set."""
        return reference.get(self.name)


@dataclass(frozen=True)
class ProviderSpec:
    """One provider: everything the app, the dialog, the CLI and the docs know about it."""

    kind: str
    """Its name in hosts.json, the CLI's `--provider` and the dialog's list."""
    implementation: str
    """The class that implements it, as `module:Class` under workroom.providers (several rows may share one)."""
    traits: ProviderTraits
    """What its boxes do when idle and how they are reached (the app decides from these, never from the kind)."""
    summary: str
    """One line for the CLI's help and the docs: what kind of machine this is."""
    reference: tuple[ReferenceField, ...] = ()
    """The provider's own reference to a machine, field by field (empty: it needs none)."""
    heartbeat_follows_window: bool = False
    """The agent's heartbeat runs at a third of the host's idle window (at most the default), so a short
    window still gets three heartbeats (the simulated box, whose windows are seconds long in tests)."""
    stdio_command: tuple[str, ...] = ()
    """The words of the platform's own stdio tunnel (its program first): an ~/.ssh/config entry whose ProxyCommand
    has them is a box of this provider, and the add-host picker offers it as one (empty: none)."""
    picker_why: str = ""
    """Why the picker offers this provider for such an entry, in a sentence."""
    label: str = ""
    """How the add-host dialog's Provider list names it (empty: its kind)."""
    only_with_module: str = ""
    """A development tool, not a place a user's work runs: offered by the dialog only where this Python module is
    installed (the dev extra; never in the shipped app, which does not contain it)."""

    def traits_for(self, idle_window_seconds: float | None) -> ProviderTraits:
        """This provider's traits for a host with this idle window (None: the provider's own). The one place
        a host's traits are computed: the session, the engine and the window all read them from here."""
        traits = self.traits.with_idle_window(idle_window_seconds)
        window = traits.idle_window_seconds
        if self.heartbeat_follows_window and window is not None:
            return traits.with_heartbeat_interval(min(DEFAULT_HEARTBEAT_INTERVAL_SECONDS, window / 3))
        return traits

    @property
    def is_this_computer(self) -> bool:
        """Its hosts are this computer: no address, port, user or key file."""
        return self.traits.transport is Transport.LOCAL

    def field(self, name: str) -> ReferenceField:
        """The reference field called `name` (KeyError when this provider has none of that name)."""
        for field in self.reference:
            if field.name == name:
                return field
        raise KeyError(name)

    def check_reference(self, reference: Mapping[str, str]) -> dict[str, str]:
        """A host's reference checked against these fields (ValueError naming the first problem)."""
        names = [f.name for f in self.reference]
        for key in reference:
            if key not in names:
                takes = f"it takes {', '.join(names)}" if names else "it takes none"
                raise ValueError(f"a {self.kind} host has no reference field {key!r} ({takes})")
        return {field.name: field.check(reference[field.name]) for field in self.reference if field.name in reference}

    def missing_reference(self, reference: Mapping[str, str]) -> ReferenceField | None:
        """The first required field that `reference` lacks, or None."""
        return next((f for f in self.reference if f.required and f.name not in reference), None)

    def reference_from_args(self, items: list[str]) -> dict[str, str]:
        """The command line's `--ref` values: `NAME=VALUE` for a named field, or a bare value for the first
        field (read as the older one-string form, so `URL#idle-clock=URL` still works). ValueError when this
        provider takes no reference, or a field is given twice."""
        if items and not self.reference:
            raise ValueError(f"a {self.kind} host takes no reference (--ref)")
        names = {f.name for f in self.reference}
        out: dict[str, str] = {}
        for item in items:
            name, sep, value = item.partition("=")
            given = {name: value} if sep and name in names else self.reference_from_legacy(item)
            for key, val in given.items():
                if key in out:
                    raise ValueError(f"the {self.field(key).label} ({key}) is given twice")
                out[key] = val
        return out

    def reference_from_legacy(self, text: str | None) -> dict[str, str]:
        """The reference an older hosts file wrote as one string (`provider_ref`): the first field's value,
        then `#<fragment>=VALUE` for the others. A provider that takes no reference never read it: dropped."""
        if not text or not self.reference:
            return {}
        first, *others = self.reference
        out: dict[str, str] = {}
        rest = text
        for field in others:
            if field.legacy_fragment is not None:
                rest, _, value = rest.partition(f"#{field.legacy_fragment}=")
                if value:
                    out[field.name] = value
        if rest:
            out[first.name] = rest
        return out


MACHINE_NAME = ReferenceField(
    "machine", "machine name",
    "The boxd machine name (as `boxd machine list` shows it), used to read whether it sleeps without waking it; "
    "empty means the address.")
HEALTH_PAGE_URL = ReferenceField(
    "health_url", "health page URL",
    "The simulator's health page, e.g. http://127.0.0.1:8765/ as `workroom-simbox up` prints it (the box is "
    "found by its SSH port), or the box's own /v1/boxes/NAME; without it the app cannot tell asleep from offline.",
    kind=ReferenceKind.URL, required=True)
PROXY_BASE_URL = ReferenceField(
    "proxy_url", "proxy base URL",
    "The platform proxy's base URL, e.g. https://app.example.dev; the app keeps the box awake through its "
    "/v1/health.",
    kind=ReferenceKind.URL, required=True)
IDLE_CLOCK_URL = ReferenceField(
    "idle_clock_url", "idle-clock URL",
    "Optional: the platform's status page that reports the box's idle timer (its API, never the box's own "
    "endpoint), so the app can check that the keep-awake is seen.",
    kind=ReferenceKind.URL, legacy_fragment="idle-clock")

WORKSPACE_NAME = ReferenceField(
    "workspace", "workspace name",
    "The Coder workspace as `coder list` shows it (OWNER/NAME for another owner's, NAME.AGENT to pick one of "
    "several agents); empty means the host's name. Your logged-in `coder` CLI reads and extends it.",
    box_rule=coder_workspace_problem, defaults_to_host_name=True)
CODESPACE_NAME = ReferenceField(
    "codespace", "codespace name",
    "The codespace as `gh codespace list` shows it (e.g. monalisa-fuzzy-space-x5gq7r); empty means the host's "
    "name. Your logged-in `gh` CLI reads its state.",
    box_rule=codespace_problem, defaults_to_host_name=True)

LOCAL_KIND = "local"

PROVIDER_SPECS: Mapping[str, ProviderSpec] = MappingProxyType({spec.kind: spec for spec in (
    ProviderSpec("ssh", "ssh_family:SshProvider", SSH_TRAITS,
                 "any machine reached with SSH (honouring ~/.ssh/config); never sleeps on its own"),
    ProviderSpec("exe.dev", "ssh_family:SshProvider", SSH_TRAITS,
                 "an exe.dev machine, reached with SSH; never sleeps on its own"),
    ProviderSpec("container", "ssh_family:SshProvider", SSH_TRAITS,
                 "a container with an SSH server; never sleeps on its own"),
    ProviderSpec("boxd", "ssh_family:BoxdProvider", BOXD_TRAITS,
                 "a boxd VM, which hibernates after network silence; the `boxd` CLI reads its state",
                 reference=(MACHINE_NAME,)),
    ProviderSpec("simbox", "simbox:SimboxProvider", SIMBOX_TRAITS,
                 "the simulated sleepable box (a development tool), through its loopback proxy",
                 reference=(HEALTH_PAGE_URL,), heartbeat_follows_window=True,
                 label="simbox (developer's simulator)", only_with_module="simbox"),
    ProviderSpec("request-metered", "request_metered:RequestMeteredProvider", REQUEST_METERED_TRAITS,
                 "a platform that sleeps a box when no request comes through its proxy",
                 reference=(PROXY_BASE_URL, IDLE_CLOCK_URL)),
    ProviderSpec("coder", "coder:CoderProvider", CODER_TRAITS,
                 "a Coder workspace, which stops at a deadline that activity (an open session) pushes back; your "
                 "`coder` CLI reads, extends and starts it",
                 reference=(WORKSPACE_NAME,), stdio_command=("coder", "ssh", "--stdio"),
                 picker_why="its ProxyCommand runs `coder ssh --stdio`: an open session there is activity and that "
                            "command starts a stopped workspace, so the coder provider reads its state from `coder "
                            "list` instead, lets go of it while idle, and starts it only when you say so"),
    ProviderSpec("codespaces", "codespaces:CodespacesProvider", CODESPACES_TRAITS,
                 "a GitHub codespace, which stops after its idle timeout without activity; your `gh` CLI reads "
                 "and starts it",
                 reference=(CODESPACE_NAME,), stdio_command=("gh", "ssh", "--stdio"),
                 picker_why="its ProxyCommand runs `gh codespace ssh --stdio`, which starts a stopped codespace, so "
                            "the codespaces provider reads its state from `gh codespace view` first, lets go of it "
                            "while idle, and starts it only when you say so"),
    ProviderSpec(LOCAL_KIND, "local:LocalProvider", LOCAL_TRAITS,
                 "this computer (the agent runs as a local process of yours)", label="local (this computer)"),
)})
"""Provider kind -> its spec, in the order the dialog lists them (this computer last)."""


class UnknownProviderError(UserError, ValueError):
    """A provider kind this app does not know."""

    def __init__(self, kind: str) -> None:
        super().__init__(
            "Unknown provider",
            f"There is no provider called {kind!r}.",
            f"Use one of: {', '.join(PROVIDER_SPECS)}.",
        )
        self.kind = kind


def spec_for(kind: str) -> ProviderSpec:
    """The spec of a provider kind, or `UnknownProviderError`."""
    try:
        return PROVIDER_SPECS[kind]
    except KeyError:
        raise UnknownProviderError(kind) from None
