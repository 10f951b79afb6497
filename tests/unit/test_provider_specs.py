"""One row per provider (core.provider_specs), and every face that reads it agrees with it.

The registry makes each row's class; no provider class exists that no row names; a host's traits are the
same whether the session (through its provider) or the window (through the host) asks; docs/providers.md
has the same rows with the same traits; the command line offers the same kinds and fields; older hosts
files load; and no provider starts the agent with an option that could carry a secret onto the box.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest
from workroom import cli, providers
from workroom.agent_bundle import AgentBundle
from workroom.core.hosts import Host, HostsFile, MissingReferenceError
from workroom.core.metering import Keeper
from workroom.core.provider_specs import PROVIDER_SPECS, ProviderSpec, ReferenceKind, spec_for
from workroom.paths import app_paths
from workroom.providers import make_provider, provider_class
from workroom.providers.base import Provider, ProviderContext
from workroom.providers.ssh_shell import SshShell
from workroom.storage import load_hosts, save_hosts

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"


@pytest.fixture
def context(tmp_path: Path) -> ProviderContext:
    return ProviderContext(bundle=AgentBundle(b"x", "0" * 64, "0.0.0"), known_hosts=None, state_dir=tmp_path)


def a_host(spec: ProviderSpec, **more: Any) -> Host:
    """A valid host of this provider, with every reference field filled."""
    reference = {f.name: ("http://127.0.0.1:9/" if f.kind is ReferenceKind.URL else "m1") for f in spec.reference}
    where = {} if spec.is_this_computer else {"address": "203.0.113.5"}
    return Host(name="h1", provider=spec.kind, reference=reference, **where, **more)


@pytest.mark.parametrize("kind", list(PROVIDER_SPECS))
def test_the_registry_makes_each_rows_class_with_its_row(kind: str, context: ProviderContext) -> None:
    spec = PROVIDER_SPECS[kind]
    provider = make_provider(kind, context)
    assert type(provider) is provider_class(spec) and provider.spec is spec and provider.kind == kind


def test_every_provider_class_is_named_by_a_row() -> None:
    classes = set()
    for info in pkgutil.iter_modules(providers.__path__):
        module = importlib.import_module(f"workroom.providers.{info.name}")
        classes |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                    if issubclass(cls, Provider) and cls is not Provider and cls.__module__ == module.__name__
                    and not inspect.isabstract(cls)}  # a shared base no row can name (PlatformProvider)
    named = {provider_class(spec) for spec in PROVIDER_SPECS.values()}
    assert classes == named, f"provider classes no row names: {classes - named}"


def test_ssh_exe_dev_and_container_are_rows_over_one_class() -> None:
    assert {provider_class(spec_for(k)) for k in ("ssh", "exe.dev", "container")} == {provider_class(spec_for("ssh"))}


@pytest.mark.parametrize("window", [None, 12.0, 120.0, 3600.0])
@pytest.mark.parametrize("kind", list(PROVIDER_SPECS))
def test_a_hosts_traits_are_the_same_from_the_provider_and_from_the_host(kind: str, window: float | None,
                                                                        context: ProviderContext) -> None:
    """The session asks the provider, the window asks the host: one computation (it was two, and the simulated
    box's heartbeat differed between them)."""
    host = a_host(PROVIDER_SPECS[kind], idle_window_seconds=window)
    assert make_provider(kind, context).traits(host) == host.traits
    if kind == "simbox" and window == 12.0:
        assert host.traits.heartbeat_interval_seconds == 4.0  # a third of a short window


def _doc_rows() -> dict[str, list[str]]:
    text = DOC.read_text()
    table = text[text.index("| kind |"):].split("\n\n", 1)[0].splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    rows = {}
    for line in table[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(header, cells, strict=True))
    return rows  # type: ignore[return-value]


def test_the_docs_table_has_every_row_with_its_traits_and_fields() -> None:
    rows = _doc_rows()
    assert set(rows) == set(PROVIDER_SPECS)
    for kind, spec in PROVIDER_SPECS.items():
        row: Any = rows[kind]
        assert row["sleeps when idle"] == ("yes" if spec.traits.metering.sleeps else "no"), kind
        assert row["idle metering"] == spec.traits.idle_metering.value, kind
        assert row["transport"].split(" ")[0] == spec.traits.transport.value, kind
        overrides = provider_class(spec).box_state is not Provider.box_state
        assert row["reads state without waking"].startswith("yes" if overrides else "no"), kind
        documented = re.findall(r"`([a-z_]+)`", row["reference"])
        assert documented == [f.name for f in spec.reference], kind
        for field in spec.reference:
            assert (f"`{field.name}` (required)" in row["reference"]) is field.required, (kind, field.name)


def test_the_command_line_offers_every_kind_and_reference_field() -> None:
    parser = cli.build_parser()
    hosts = next(a for a in parser._actions if a.dest == "command").choices["hosts"]  # type: ignore[index]
    add = next(a for a in hosts._actions if a.dest == "hosts_command").choices["add"]
    provider = next(a for a in add._actions if a.dest == "provider")
    assert list(provider.choices) == list(PROVIDER_SPECS)
    ref_help = next(a for a in add._actions if a.dest == "reference").help % {}  # made when help is printed
    for spec in PROVIDER_SPECS.values():
        for field in spec.reference:
            assert field.name in ref_help


def test_ref_arguments_name_fields_or_give_the_first() -> None:
    metered = spec_for("request-metered")
    assert metered.reference_from_args(["https://p.example", "idle_clock_url=https://s.example/x?a=b"]) == {
        "proxy_url": "https://p.example", "idle_clock_url": "https://s.example/x?a=b"}
    assert metered.reference_from_args(["https://p.example#idle-clock=https://s.example"]) == {
        "proxy_url": "https://p.example", "idle_clock_url": "https://s.example"}
    assert spec_for("simbox").reference_from_args(["http://h/?x=1"]) == {"health_url": "http://h/?x=1"}
    with pytest.raises(ValueError, match="takes no reference"):
        spec_for("ssh").reference_from_args(["m1"])
    with pytest.raises(ValueError, match="given twice"):
        metered.reference_from_args(["https://a", "proxy_url=https://b"])


def test_a_reference_is_checked_by_its_field() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        Host(name="s", provider="simbox", reference={"health_url": "127.0.0.1:8765"})
    with pytest.raises(ValueError, match="no reference field 'machine'"):
        Host(name="s", provider="ssh", reference={"machine": "m1"})
    with pytest.raises(ValueError, match="one word"):
        Host(name="b", provider="boxd", reference={"machine": "two words"})
    with pytest.raises(MissingReferenceError, match="health page URL"):
        HostsFile().add(Host(name="s", provider="simbox"))
    assert HostsFile(hosts=(Host(name="s", provider="simbox"),)).names() == ["s"]  # an old file still loads


def test_an_older_hosts_file_with_provider_ref_loads_into_the_typed_fields(tmp_path: Path) -> None:
    paths = app_paths({"WORKROOM_HOME": str(tmp_path)}).ensure()
    old = [
        {"name": "b", "provider": "boxd", "address": "b.example", "provider_ref": "m1"},
        {"name": "s", "provider": "simbox", "provider_ref": "http://127.0.0.1:8765/"},
        {"name": "r", "provider": "request-metered", "provider_ref": "https://p.example#idle-clock=https://s.example"},
        {"name": "r2", "provider": "request-metered", "provider_ref": "https://p.example"},
        {"name": "e", "provider": "exe.dev", "provider_ref": "never-read"},
        {"name": "n", "provider": "ssh", "provider_ref": None},
    ]
    paths.hosts_file.write_text(json.dumps({"version": 1, "hosts": old}))
    loaded = load_hosts(paths)
    assert loaded.problem is None
    assert {h.name: dict(h.reference) for h in loaded.value.hosts} == {
        "b": {"machine": "m1"}, "s": {"health_url": "http://127.0.0.1:8765/"},
        "r": {"proxy_url": "https://p.example", "idle_clock_url": "https://s.example"},
        "r2": {"proxy_url": "https://p.example"}, "e": {}, "n": {}}
    save_hosts(paths, loaded.value)
    saved = json.loads(paths.hosts_file.read_text())["hosts"]
    assert "provider_ref" not in saved[0] and saved[0]["reference"] == {"machine": "m1"}
    assert load_hosts(paths).value == loaded.value


class _RecordingConnection:
    """Stands in for the SSH connection only to catch the command the relay channel would run."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def open_exec_channel(self, cmd: str) -> Any:
        self.commands.append(cmd)
        raise ConnectionAbortedError("recorded")


def test_the_relay_runs_the_agent_with_the_providers_python(context: ProviderContext) -> None:
    """The installer and the relay read one `python_command`: a provider that changes it changes both."""
    import asyncio

    class OwnPython(provider_class(spec_for("ssh"))):  # type: ignore[misc]
        def python_command(self, host: Host) -> tuple[str, ...]:
            return ("/opt/py/bin/python3.12", "-I")

    from wr_agent import bundle  # the real agent's bytes: the relay's code comes from them

    real = ProviderContext(bundle=AgentBundle(bundle.bundle_bytes(), "0" * 64, "0.1.0"), known_hosts=None,
                           state_dir=context.state_dir)
    connection = _RecordingConnection()
    provider = OwnPython(real, spec_for("ssh"))
    host = a_host(spec_for("ssh"))
    with pytest.raises(ConnectionAbortedError):
        asyncio.run(provider.open_link(host, SshShell(connection), "~/.local/state/wr-agent/agent.sock",
                                       lambda _: None))
    assert len(connection.commands) == 1
    command = connection.commands[0]
    # The relay's code comes in the command (from the app's bundle), run by that Python: no installed file runs.
    assert "[ -x /opt/py/bin/python3.12 ]" in command
    assert "; exec /opt/py/bin/python3.12 -I -I -S -c " in command
    assert command.endswith(" '~/.local/state/wr-agent/agent.sock'") and "wr-agent.pyz" not in command


# Options the agent is started with that can carry no secret. A new one (say an API token for a provider's
# keep-awake) must be argued for here: keeping a box awake never needs a credential on the box.
NO_SECRET_OPTIONS = {"--socket", "--workroom", "--candidates", "--no-heartbeat", "--heartbeat-interval",
                     "--health-listen", "--exclude-pid"}


@pytest.mark.parametrize("kind", list(PROVIDER_SPECS))
def test_no_providers_keep_awake_holds_a_credential_on_the_box(kind: str, context: ProviderContext) -> None:
    provider = make_provider(kind, context)
    spec = PROVIDER_SPECS[kind]
    for window in (None, 90.0):
        host = a_host(spec, idle_window_seconds=window)
        argv = provider.serve_options(host).argv("/run/agent.sock")
        assert argv[0] == "serve"
        options = {a.split("=", 1)[0] for a in argv[1:] if a.startswith("--")}
        assert options <= NO_SECRET_OPTIONS, f"{kind} starts the agent with {options - NO_SECRET_OPTIONS}"
        traits = provider.traits(host)
        assert ("--no-heartbeat" in argv) is not (traits.metering.keeper is Keeper.AGENT_HEARTBEAT)
