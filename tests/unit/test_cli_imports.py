"""The `workroom` command starts in a blink: `--version` and `--help` import nothing heavy, and each command
imports only what it uses (Qt never). Checked by the modules a fresh interpreter holds after the command, not
by timing (a timing would depend on the machine; `bench/connect_bench.py` measures it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.cli_child import modules_after

pytestmark = pytest.mark.unit

HEAVY = ("paramiko", "cryptography", "pydantic", "asyncio", "PySide6", "qasync", "keyring",
         "workroom.core.errors", "workroom.sessions.engine", "workroom.remote.ssh_connection")
QT = ("PySide6", "qasync", "shiboken6")

def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in modules]


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["connect", "--help"], ["status", "--help"]])
def test_version_and_help_import_nothing_heavy(argv: list[str], tmp_path: Path) -> None:
    out, modules = modules_after(argv, tmp_path)
    assert "workroom" in out  # it did answer
    assert loaded(modules, HEAVY) == []


def test_version_builds_no_parser(tmp_path: Path) -> None:
    out, modules = modules_after(["--version"], tmp_path)
    assert out.strip().startswith("workroom ")
    assert "argparse" not in modules


@pytest.mark.parametrize("argv", [["hosts", "list"], ["settings", "get"], ["status", "--json"]])
def test_no_command_imports_qt(argv: list[str], tmp_path: Path) -> None:
    _, modules = modules_after(argv, tmp_path)
    assert loaded(modules, QT) == []


def test_a_command_without_hosts_to_reach_imports_no_ssh(tmp_path: Path) -> None:
    _, modules = modules_after(["hosts", "list"], tmp_path)
    assert loaded(modules, ("paramiko", "cryptography", "asyncio", "workroom.sessions.engine")) == []


def test_paramiko_comes_without_invoke() -> None:
    """paramiko imports `invoke` only for its own ssh_config's `Match exec`, which the app never uses: the
    remote package marks it absent, so a command's start-up does not pay for it, and paramiko still works."""
    child = ("import sys, workroom.remote.ssh_connection, paramiko.config; "
             "print(sys.modules.get('invoke') is None, any(m.startswith('invoke.') for m in sys.modules), "
             "paramiko.config.invoke is None)")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "False", "True"]


PROGRAM = """
import atexit, sys
from workroom.cli import main
atexit.register(lambda: print("torn down"))
sys.argv = ["workroom", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.parametrize(("argv", "code", "torn_down"), [
    (["why", "nowhere"], 3, False),  # the engine was imported: the process ends at once after its words
    (["settings", "get"], 0, True),  # no engine: the ordinary exit
])
def test_a_command_that_used_the_engine_ends_without_the_teardown_and_loses_no_words(
        argv: list[str], code: int, torn_down: bool, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, timeout=60,
                          env={"WORKROOM_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == code, done.stderr
    assert ("torn down" in done.stdout) is torn_down
    if code:
        assert done.stderr.startswith("workroom: No such host: There is no host called 'nowhere'.")
        assert done.stderr.rstrip().endswith("Run `workroom hosts list`.")
    else:
        assert "ceiling" in done.stdout


def test_the_engine_loads_without_paramiko_until_a_host_is_reached_over_ssh(tmp_path: Path) -> None:
    """paramiko (with cryptography and nacl, ~185 ms here) loads with the first SSH connection, not with the
    engine: the app's start and a command that answers from this computer or from OpenSSH's own `ssh` do
    without it."""
    code = ("import json, sys; import workroom.sessions.engine, workroom.cli, workroom.providers.ssh_family;"
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"WORKROOM_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True)
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert "workroom.sessions.engine" in modules
    assert loaded(modules, ("paramiko", "cryptography", "nacl", "workroom.remote.ssh_connection")) == []


LOOK_BUDGET = ("paramiko", "cryptography", "nacl", "keyring", "PySide6", "workroom.sessions.engine",
               "workroom.sessions.host_session", "workroom.remote.ssh_connection", "workroom.remote.agent_install",
               "workroom.remote.agent_link", "workroom.remote.agent_client", "workroom.providers.ssh_shell",
               "workroom.remote.host_keys", "workroom.core.protocol", "workroom.credentials", "workroom.agent_bundle",
               "zipfile")
"""What a look without the app never imports (docs/cli.md, "A look is never a touch"): it reads files and the
providers' control planes, so it needs no SSH, engine, agent bundle (finding it hashes the agent's sources), agent
install or link, wire models or keyring."""


@pytest.mark.parametrize("argv", [["status"], ["status", "--json"]])
def test_a_look_at_every_kind_of_host_stays_in_its_import_budget(argv: list[str], tmp_path: Path) -> None:
    """Every provider row has a host (their control planes unreachable here: a look says so, and still imports
    nothing to connect with)."""
    from workroom.core.hosts import Host, HostsFile
    from workroom.core.provider_specs import PROVIDER_SPECS
    from workroom.paths import app_paths
    from workroom.storage import save_hosts

    refs = {"boxd": {"machine": "m1"}, "simbox": {"health_url": "http://127.0.0.1:9/v1/boxes/b"},
            "request-metered": {"proxy_url": "http://127.0.0.1:9", "idle_clock_url": "http://127.0.0.1:9/idle"},
            "coder": {"workspace": "ws"}, "codespaces": {"codespace": "cs"}}
    hosts = tuple(Host(name=f"h-{kind.replace('.', '-')}", provider=kind,
                       address=None if kind == "local" else "127.0.0.1", reference=refs.get(kind, {}))
                  for kind in PROVIDER_SPECS)
    save_hosts(app_paths({"WORKROOM_HOME": str(tmp_path)}).ensure(), HostsFile(hosts=hosts))
    out, modules = modules_after(argv, tmp_path)
    assert all(h.name in out for h in hosts), out
    assert loaded(modules, LOOK_BUDGET) == []
