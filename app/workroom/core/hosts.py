"""Hosts (one workroom each) and the list the user keeps of them.

A host holds only references: the identity is a key file path, never a secret.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from workroom.core.errors import ExitCode, UserError
from workroom.core.provider_specs import LOCAL_KIND, PROVIDER_SPECS, ProviderSpec, UnknownProviderError, spec_for
from workroom.core.ssh_names import SshNameKind, ssh_name_problem
from workroom.core.traits import ProviderTraits

MAX_NAME_LENGTH = 64
LOCAL_PROVIDER = LOCAL_KIND
FALLBACK_LOCAL_NAME = "this-computer"

AgentCandidates = Literal["all", "user"]
"""Which processes the agent counts as work: every process, or only the connecting user's."""


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in text)


def check_host_name(name: str) -> str:
    """Return `name` if it can name a workroom, else raise ValueError saying why."""
    if not name or not name.strip():
        raise ValueError("a host name cannot be empty")
    if name != name.strip():
        raise ValueError(f"a host name cannot start or end with spaces (got {name!r})")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"a host name is at most {MAX_NAME_LENGTH} characters (got {len(name)})")
    if "/" in name or "\\" in name:
        raise ValueError(f"a host name cannot contain slashes (got {name!r})")
    if _has_control(name):
        raise ValueError(f"a host name cannot contain control characters (got {name!r})")
    if name in (".", ".."):
        raise ValueError(f"{name!r} cannot name a host")
    return name


class IdentityKind(StrEnum):
    FILE = "file"
    """A private key file on this computer (its passphrase, if any, lives in the keyring)."""


_PRIVATE_KEY_MARK = re.compile(r"-----BEGIN|PRIVATE KEY", re.IGNORECASE)


class IdentityRef(BaseModel):
    """Where the SSH identity lives. Never the secret itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: IdentityKind
    value: str = Field(min_length=1, max_length=4096)

    @field_validator("value")
    @classmethod
    def _not_a_secret(cls, value: str) -> str:
        if _PRIVATE_KEY_MARK.search(value) or "\n" in value or _has_control(value):
            raise ValueError("an identity is a key file path, never the key itself")
        return value

    @classmethod
    def file(cls, path: str) -> IdentityRef:
        return cls(kind=IdentityKind.FILE, value=path)


Port = Annotated[int, Field(ge=1, le=65535, strict=True)]


class Host(BaseModel):
    """One workroom: which provider runs it and how to reach it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The workroom's name, shown everywhere; unique in the hosts file."""
    provider: str = LOCAL_PROVIDER
    address: str | None = None
    """Host name or IP to connect to; None means the name itself (an ~/.ssh/config alias works)."""
    port: Port | None = None
    """None means ~/.ssh/config's Port, else 22."""
    user: str | None = None
    identity: IdentityRef | None = None
    idle_window_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """This host's own idle window, when it differs from the provider's (or the provider's is unknown)."""
    agent_candidates: AgentCandidates | None = None
    reference: Mapping[str, str] = Field(default_factory=dict)
    """The provider's own reference to the machine, by its spec's fields (core.provider_specs): a boxd
    machine name, a simulated box's health page, a platform's proxy URL. An older hosts file's one-string
    `provider_ref` is read into these fields."""
    hourly_price: float | None = Field(default=None, ge=0, le=100000, allow_inf_nan=False)
    """What the provider charges an hour while the box runs, as the user entered it (for the timeline's cost)."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_provider_ref(cls, data: Any) -> Any:
        """An older hosts file wrote the reference as one string, `provider_ref`, in a form of each provider's
        own (`URL#idle-clock=URL`): read it into the provider's fields."""
        if not isinstance(data, dict) or "provider_ref" not in data:
            return data
        data = dict(data)
        legacy = data.pop("provider_ref")
        if legacy is None:
            return data
        if data.get("reference"):
            raise ValueError("a host has either a reference or an older provider_ref, not both")
        if not isinstance(legacy, str):
            raise ValueError(f"provider_ref must be text (got {legacy!r})")
        spec = PROVIDER_SPECS.get(str(data.get("provider", LOCAL_PROVIDER)))
        if spec is not None:
            data["reference"] = spec.reference_from_legacy(legacy)
        return data

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        return check_host_name(name)

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, provider: str) -> str:
        if provider not in PROVIDER_SPECS:
            raise ValueError(str(UnknownProviderError(provider)))
        return provider

    @field_validator("reference")
    @classmethod
    def _reference_fits_provider(cls, reference: Mapping[str, str], info: ValidationInfo) -> Mapping[str, str]:
        provider = info.data.get("provider")
        return reference if provider is None else spec_for(provider).check_reference(reference)

    @field_validator("address", "user")
    @classmethod
    def _plain_token(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value or any(ch.isspace() for ch in value) or _has_control(value) or len(value) > 255:
            raise ValueError(f"must be a non-empty word without spaces or control characters (got {value!r})")
        return value

    @model_validator(mode="after")
    def _fits_its_provider(self) -> Self:
        if self.spec.is_this_computer and (self.address or self.port or self.user or self.identity):
            raise ValueError(
                f"the {self.provider} provider is this computer: it takes no address, port, user or identity"
            )
        return self

    @property
    def spec(self) -> ProviderSpec:
        """This host's provider, as declared in core.provider_specs."""
        return spec_for(self.provider)

    @property
    def traits(self) -> ProviderTraits:
        """The provider's traits for this host (its idle window applied): the one place they are computed."""
        return self.spec.traits_for(self.idle_window_seconds)

    @property
    def is_this_computer(self) -> bool:
        return self.spec.is_this_computer

    @property
    def connect_address(self) -> str:
        """What to hand SSH as the host: the address, or the name as an ~/.ssh/config alias."""
        return self.address or self.name

    @classmethod
    def local(cls, hostname: str) -> Host:
        """This computer as a host, named for its short hostname (made safe if need be)."""
        return cls(name=local_host_name(hostname), provider=LOCAL_PROVIDER)


def local_host_name(hostname: str) -> str:
    """A valid host name from this machine's hostname: the short name, cleaned, or a fallback."""
    short = hostname.split(".", 1)[0]
    short = "".join(ch for ch in short if not _has_control(ch) and ch not in "/\\").strip()
    short = short[:MAX_NAME_LENGTH].strip()
    try:
        return check_host_name(short)
    except ValueError:
        return FALLBACK_LOCAL_NAME


class HostNotFoundError(UserError, KeyError):
    exit_code = ExitCode.NO_HOST

    def __init__(self, name: str) -> None:
        super().__init__("No such host", f"There is no host called {name!r}.", "Run `workroom hosts list`.")
        self.name = name

    def __str__(self) -> str:
        return UserError.__str__(self)


class DuplicateHostError(UserError, ValueError):
    exit_code = ExitCode.ERROR

    def __init__(self, name: str) -> None:
        super().__init__(
            "Host already exists",
            f"There is already a host called {name!r}.",
            "Pick another name, or remove the existing host first.",
        )
        self.name = name


class UnsafeHostNameError(UserError, ValueError):
    """A name, address or user that OpenSSH's client would refuse (core.ssh_names): a command on the host
    would take it for an option, or a shell running an ssh_config `Match exec` or `ProxyCommand` would read
    it as syntax. Checked when a host is added or edited, and again before any ssh_config token expands (so a
    hosts file edited by hand cannot get past it); not when the hosts file loads, so an old file with such a
    host is not set aside whole."""

    exit_code = ExitCode.ERROR

    def __init__(self, what: str, value: str, why: str = "cannot start with '-': programs would take it for "
                 "an option") -> None:
        super().__init__(
            f"That host {what} cannot be used",
            f"A host {what} {why} (got {value!r}). ssh refuses it too.",
            f"Pick {'an' if what == 'address' else 'a'} {what} of letters, digits, '.', '-' and '_' that starts "
            "with a letter or a digit.",
        )
        self.what = what
        self.value = value


def check_ssh_names(host: Host, before: Host | None = None) -> None:
    """Raise UnsafeHostNameError when `host` would hand ssh a host or user it refuses (core.ssh_names); with
    `before`, only what differs from it is checked (an edit keeps what the file already held)."""
    if host.is_this_computer:
        return
    for what, kind, value, old in (
            ("address" if host.address else "name", SshNameKind.HOST, host.connect_address,
             before.connect_address if before is not None else None),
            ("user", SshNameKind.USER, host.user, before.user if before is not None else None)):
        if value is None or value == old:
            continue
        why = ssh_name_problem(kind, value)
        if why is not None:
            raise UnsafeHostNameError(what, value, why)


class RenamedHostError(UserError, ValueError):
    """An edit that would change a host's name (the name keys its session, keyring entries and verdict)."""

    exit_code = ExitCode.ERROR

    def __init__(self, old: str, new: str) -> None:
        super().__init__(
            "A host's name cannot be changed",
            f"{old!r} cannot become {new!r} by editing it.",
            "Add a host with the new name, then remove the old one.",
        )


class MissingReferenceError(UserError, ValueError):
    """A host added (or edited) without a reference field its provider cannot work without. Checked when a
    host is added or edited, not when the hosts file loads (an older file keeps loading)."""

    exit_code = ExitCode.USAGE

    def __init__(self, provider: str, field: str, label: str) -> None:
        super().__init__(
            "That host needs more",
            f"A {provider} host needs its {label}.",
            f"Give it (`--ref {field}=...` on the command line).",
        )
        self.field = field
        self.label = label


def check_reference_given(host: Host) -> Host:
    """`host`, or MissingReferenceError naming the first required reference field it lacks."""
    missing = host.spec.missing_reference(host.reference)
    if missing is not None:
        raise MissingReferenceError(host.provider, missing.name, missing.label)
    return host


class BoxNameError(UserError, ValueError):
    """A workspace or codespace name the platform's own naming rule refuses (core.platform_names). Checked when a
    host is added or edited and before each use; not when the hosts file loads (an old host keeps loading, and
    is refused with these words when it is used, its name never passed to the platform's command line)."""

    exit_code = ExitCode.USAGE
    retryable = False

    def __init__(self, host: str, field: str, why: str) -> None:
        super().__init__(
            "Not a name the platform takes",
            f"{host}: {why}; it is not passed to the platform's command line.",
            f"Give the name its list shows (`--ref {field}=NAME`).",
        )
        self.field = field


def box_names(host: Host) -> dict[str, str]:
    """The platform names of the box `host` stands for, by reference field (BoxNameError when one breaks its
    platform's rule)."""
    out = {}
    for field in host.spec.reference:
        if field.box_rule is not None:
            try:
                out[field.name] = field.box_name(host.name, host.reference)
            except ValueError as exc:
                raise BoxNameError(host.name, field.name, str(exc)) from None
    return out


def check_new_host(host: Host) -> Host:
    """The rules for a host being added, beyond those every loaded host meets."""
    if host.name.startswith("-"):
        raise UnsafeHostNameError("name", host.name)
    check_ssh_names(host)
    box_names(host)
    return check_reference_given(host)


def check_edited_host(old: Host, new: Host) -> Host:
    """The rules for `old` changed into `new`: the name stays, and a name, address or user the edit brings
    in meets the rules of a new host. One already in the file stays as it is (as it did when it loaded), so
    an old host whose name starts with '-' can still have its port changed."""
    if new.name != old.name:
        raise RenamedHostError(old.name, new.name)
    check_ssh_names(new, before=old)
    if new.reference != old.reference or new.provider != old.provider:
        box_names(new)  # a name the edit brings in; an old one is refused at use (it loaded as it was)
    if new.provider != old.provider or old.spec.missing_reference(old.reference) is None:
        check_reference_given(new)  # an older host that lacked it keeps loading and saving as it was
    return new


def _same_name(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


class HostsFile(BaseModel):
    """The user's hosts, names unique (ignoring case). Changes return a new value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    hosts: tuple[Host, ...] = ()

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        seen: set[str] = set()
        for host in self.hosts:
            key = host.name.casefold()
            if key in seen:
                raise ValueError(f"the host name {host.name!r} appears more than once")
            seen.add(key)
        return self

    def names(self) -> list[str]:
        return [host.name for host in self.hosts]

    def get(self, name: str) -> Host | None:
        return next((host for host in self.hosts if _same_name(host.name, name)), None)

    def require(self, name: str) -> Host:
        host = self.get(name)
        if host is None:
            raise HostNotFoundError(name)
        return host

    def add(self, host: Host) -> HostsFile:
        check_new_host(host)
        if self.get(host.name) is not None:
            raise DuplicateHostError(host.name)
        return HostsFile(hosts=(*self.hosts, host))

    def remove(self, name: str) -> HostsFile:
        self.require(name)
        return HostsFile(hosts=tuple(h for h in self.hosts if not _same_name(h.name, name)))

    def edit(self, name: str, host: Host) -> HostsFile:
        """The same list with the host called `name` changed into `host` (same position), checked first by
        `check_edited_host` (raises RenamedHostError, UnsafeHostNameError, HostNotFoundError)."""
        return self.replace(check_edited_host(self.require(name), host))

    def replace(self, host: Host) -> HostsFile:
        """The same list with the host of that name swapped for `host` (same position)."""
        self.require(host.name)
        return HostsFile(hosts=tuple(host if _same_name(h.name, host.name) else h for h in self.hosts))

    @classmethod
    def first_run(cls, hostname: str) -> HostsFile:
        """What a new user sees: this computer, so a live badge shows before adding anything."""
        return cls(hosts=(Host.local(hostname),))
