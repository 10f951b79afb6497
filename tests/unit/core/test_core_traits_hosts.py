"""Provider traits, hosts and the hosts list; and the house rule that core has no Qt and no I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from workroom.core.app_settings import AppSettings
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.errors import UserError
from workroom.core.hosts import (
    FALLBACK_LOCAL_NAME,
    DuplicateHostError,
    Host,
    HostNotFoundError,
    HostsFile,
    IdentityKind,
    IdentityRef,
    check_host_name,
    local_host_name,
)
from workroom.core.metering import IdleMetering, Keeper
from workroom.core.provider_specs import PROVIDER_SPECS, UnknownProviderError, spec_for
from workroom.core.traits import ProviderTraits, Transport

pytestmark = pytest.mark.unit

CORE = Path(__file__).resolve().parents[3] / "app" / "workroom" / "core"


def traits_for_kind(kind: str) -> ProviderTraits:
    return spec_for(kind).traits


def test_provider_kinds_declare_the_designed_traits() -> None:
    sleepers = {k for k, spec in PROVIDER_SPECS.items() if spec.traits.metering.sleeps}
    assert sleepers == {"boxd", "simbox", "request-metered", "coder", "codespaces"}
    assert traits_for_kind("boxd").idle_metering is IdleMetering.NETWORK
    for platform in ("coder", "codespaces"):  # an open session is activity there: none is held while idle
        assert traits_for_kind(platform).idle_metering is IdleMetering.SESSIONS
        assert traits_for_kind(platform).metering.keeper is Keeper.PLATFORM
        assert not traits_for_kind(platform).metering.session_while_idle
    assert traits_for_kind("request-metered").idle_metering is IdleMetering.REQUESTS
    assert traits_for_kind("request-metered").metering.keeper is Keeper.THIS_COMPUTER
    assert traits_for_kind("boxd").metering.keeper is Keeper.AGENT_HEARTBEAT
    assert traits_for_kind("local").transport is Transport.LOCAL
    assert {k for k, spec in PROVIDER_SPECS.items() if spec.is_this_computer} == {"local"}
    with pytest.raises(UnknownProviderError, match="boxd"):
        spec_for("cloud9")


def test_traits_must_be_consistent() -> None:
    never = ProviderTraits(idle_metering=IdleMetering.NEVER, transport=Transport.SSH)
    assert not never.metering.sleeps  # whether a box sleeps is its metering row's, said once
    with pytest.raises(ValidationError, match="heartbeat"):
        ProviderTraits(idle_metering=IdleMetering.REQUESTS, transport=Transport.SSH,
                       heartbeat_interval_seconds=60)
    with pytest.raises(ValueError):
        traits_for_kind("boxd").with_idle_window(float("nan"))
    assert traits_for_kind("boxd").with_idle_window(None) is traits_for_kind("boxd")


@pytest.mark.parametrize("name", ["", " ", " lead", "a/b", "a\\b", "tab\there", "nl\n", "x" * 65, "..", "\u200b"])
def test_bad_host_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        check_host_name(name)
    with pytest.raises(ValidationError):
        Host(name=name)


@given(st.text(min_size=1, max_size=64))
def test_host_name_validation_never_crashes(name: str) -> None:
    try:
        Host(name=name)
    except ValidationError:
        pass


@pytest.mark.parametrize(("hostname", "name"), [("mybox.example.com", "mybox"), ("Mac-Pro.local", "Mac-Pro"),
                                               ("", FALLBACK_LOCAL_NAME), ("/", FALLBACK_LOCAL_NAME),
                                               ("x" * 100, "x" * 64)])
def test_local_host_name(hostname: str, name: str) -> None:
    assert local_host_name(hostname) == name


def test_host_fields() -> None:
    host = Host(name="gpu-box", provider="boxd", address="10.0.0.5", port=2222, user="dev",
                identity=IdentityRef.file("~/.ssh/id_ed25519"), idle_window_seconds=120, agent_candidates="user")
    assert host.traits.idle_window_seconds == 120 and host.traits.metering.sleeps
    assert host.connect_address == "10.0.0.5"
    assert Host(name="alias", provider="ssh").connect_address == "alias"
    assert Host.model_validate_json(host.model_dump_json()) == host
    for bad in ({"port": 0}, {"port": 65536}, {"port": True}, {"port": "22"}, {"provider": "nope"},
                {"address": "two words"}, {"idle_window_seconds": 0}, {"agent_candidates": "root"},
                {"colour": "red"}):
        with pytest.raises(ValidationError):
            Host.model_validate({"name": "h", "provider": "ssh", **bad})
    with pytest.raises(ValidationError, match="local provider"):
        Host(name="me", provider="local", address="1.2.3.4")


def test_identity_is_a_reference_never_a_secret() -> None:
    assert IdentityRef.file("~/.ssh/id_ed25519").kind is IdentityKind.FILE
    with pytest.raises(ValidationError):
        IdentityRef.model_validate({"kind": "keyring", "value": "gpu-key"})  # no such identity kind
    with pytest.raises(ValidationError, match="never the key"):
        IdentityRef.file("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn...")


def test_hosts_file_add_remove_are_pure_and_names_unique() -> None:
    empty = HostsFile()
    one = empty.add(Host(name="a", provider="ssh"))
    two = one.add(Host(name="b", provider="boxd"))
    assert empty.hosts == () and one.names() == ["a"] and two.names() == ["a", "b"]
    with pytest.raises(DuplicateHostError):
        two.add(Host(name="A", provider="ssh"))
    assert two.remove("a").names() == ["b"] and two.names() == ["a", "b"]
    with pytest.raises(HostNotFoundError) as caught:
        two.remove("zzz")
    assert isinstance(caught.value, UserError) and "zzz" in str(caught.value)
    assert two.replace(Host(name="a", provider="exe.dev")).require("a").provider == "exe.dev"
    with pytest.raises(ValidationError, match="more than once"):
        HostsFile(hosts=(Host(name="a"), Host(name="a")))
    first = HostsFile.first_run("laptop.lan")
    assert first.names() == ["laptop"] and first.hosts[0].provider == "local"


def test_connection_info_with_state() -> None:
    info = ConnectionInfo().with_state(ConnectionState.LOST, 5.0, error=UserError("Lost", "Gone.", "Retry."))
    assert info.state is ConnectionState.LOST and info.since_monotonic == 5.0
    assert info.error is not None and info.error.text() == "Lost: Gone. Retry."
    assert info.with_state(ConnectionState.LIVE, 6.0).error is None


def test_app_settings_defaults() -> None:
    assert AppSettings().ceiling.ceiling_seconds == 4 * 3600


ALLOWED_IMPORTS = {"__future__", "collections", "dataclasses", "enum", "json", "math", "re", "types",
                   "typing", "unicodedata", "pydantic", "workroom"}


def test_core_imports_no_qt_no_io_and_nothing_else_of_the_app() -> None:
    for path in CORE.glob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in ALLOWED_IMPORTS, f"{path.name} imports {name}"
                if top == "workroom":
                    assert name.startswith("workroom.core"), f"{path.name} imports {name}"
