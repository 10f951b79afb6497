"""What the app carries to a host is the agent bundle's own modules, complete and in import order, and the
two sides of each rule they share agree: the probe's answer read by the app, the relay's condition, the
LaunchAgent's label. Running the carried commands on a host is held by the integration tests
(tests/integration/agent/test_agent_install_steps.py, tests/integration/engine/)."""

from __future__ import annotations

import ast
import hashlib

import pytest
from workroom.agent_bundle import AgentBundle
from workroom.remote import agent_install
from workroom.remote.agent_install import AgentInstaller, AgentLayout, ServeOptions
from workroom.remote.host_python import CARRIED_FIRST, carried_script, inline_command, stdin_command
from workroom.remote.host_shell import ExecResult, LocalShell
from wr_agent import VERSION, bundle, install_probe, uninstall

pytestmark = pytest.mark.unit

CARRIED = {name: value for name, value in vars(agent_install).items() if name.endswith("_MODULES")}
LAZY_NOT_CARRIED = {("PROBE_MODULES", "wr_agent.install_probe", "wr_agent.relay")}
"""A module imported inside a function that this step never reaches: the probe imports the relay only when
its command says `relay`, which only PROBE_THEN_RELAY_MODULES' command does."""


@pytest.fixture(scope="module")
def ours() -> AgentBundle:
    data = bundle.bundle_bytes()
    return AgentBundle(data=data, sha256=hashlib.sha256(data).hexdigest(), version=VERSION)


def agent_imports(source: str) -> list[tuple[str, bool]]:
    """(module of the agent imported, whether at the module's top level) for each import in `source`."""
    tree = ast.parse(source)
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [(n, id(node) in top) for n in names if n.startswith("wr_agent.")]
    return found


def test_the_steps_are_found() -> None:
    assert set(CARRIED) == {"PROBE_MODULES", "RELAY_MODULES", "PROBE_THEN_RELAY_MODULES", "PLACE_MODULES",
                            "WAIT_MODULES", "UNINSTALL_MODULES", "REPLACE_MODULES"}


@pytest.mark.parametrize("step", sorted(CARRIED))
def test_every_step_carries_what_its_modules_import_before_them(ours: AgentBundle, step: str) -> None:
    """On the host only the carried modules exist (`wr_agent` is not a package there): a module imported and
    not carried, or carried after the one that imports it at its top, fails only there."""
    order = [*CARRIED_FIRST, *(m for m in CARRIED[step] if m not in CARRIED_FIRST)]
    for at, module in enumerate(order):
        for imported, top_level in agent_imports(ours.module_source(module)):
            if (step, module, imported) in LAZY_NOT_CARRIED:
                continue
            assert imported in order, f"{step}: {module} imports {imported}, which is not carried"
            if top_level:
                assert order.index(imported) < at, f"{step}: {imported} must come before {module}"


@pytest.mark.parametrize("step", sorted(CARRIED))
def test_the_script_carries_the_bundles_own_text_and_runs_the_last_modules_main(ours: AgentBundle,
                                                                               step: str) -> None:
    script = carried_script(ours, CARRIED[step])
    compile(script, "<carried>", "exec")
    tree = ast.parse(script)
    sources = ast.literal_eval(next(n.value for n in tree.body if isinstance(n, ast.Assign)
                                    and getattr(n.targets[0], "id", "") == "SOURCES"))
    names = [name for name, _ in sources]
    assert names[:len(CARRIED_FIRST)] == list(CARRIED_FIRST) and names[-1] == CARRIED[step][-1]
    assert len(set(names)) == len(names)
    assert all(text == ours.module_source(name) for name, text in sources)
    assert "main" in {f.name for f in ast.parse(sources[-1][1]).body if isinstance(f, ast.FunctionDef)}


def test_the_commands_say_when_the_host_has_no_such_python(ours: AgentBundle) -> None:
    cmd, script = stdin_command(ours, agent_install.PROBE_MODULES, "a b", python=("/opt/py/bin/python3",))
    assert cmd.startswith("[ -x /opt/py/bin/python3 ] || { echo 'wr: no python3' >&2; exit 127; }; ")
    assert cmd.endswith("exec /opt/py/bin/python3 - 'a b'") and script == carried_script(
        ours, agent_install.PROBE_MODULES).encode()
    inline = inline_command(ours, agent_install.RELAY_MODULES, "relay", python=("python3",), flags=("-I", "-S"))
    assert inline.startswith("command -v python3 >/dev/null 2>&1 || ") and "exec python3 -I -S -c 'SOURCES = " in inline


def answer(sha256: str | None, running: bool) -> dict[str, object]:
    return {"python": "3.11.2", "home": "/home/u", "bundle": "/home/u/b.pyz", "socket": "/home/u/a.sock",
            "sha256": sha256, "version": None, "running": running, "systemd_user": False, "repaired": [],
            "launchd": False, "supervisor": None}


@pytest.mark.parametrize("running", [True, False])
@pytest.mark.parametrize("which", ["ours", "other", None])
def test_the_app_reads_the_probes_answer_and_its_relay_rule_is_the_hosts(ours: AgentBundle, running: bool,
                                                                         which: str | None) -> None:
    sha = {"ours": ours.sha256, "other": "0" * 64, None: None}[which]
    text = install_probe.dumps(answer(sha, running))
    installer = AgentInstaller(LocalShell(), ours, AgentLayout(), ServeOptions(workroom="t"))
    probe = installer.read_probe(ExecResult(0, text.encode() + b"\n", b""))
    assert (probe.sha256, probe.running, probe.home) == (sha, running, "/home/u")
    assert installer.relay_follows(probe) is bool(install_probe.relay_follows(answer(sha, running), ours.sha256))


def test_the_uninstall_finds_the_launch_agent_the_installer_named() -> None:
    sock = "/Users/u/.local/state/wr-agent/agent.sock"
    assert f"{uninstall.launchd_label(agent_install.LAUNCHD_LABEL_PREFIX, sock)}" == agent_install.launchd_label(sock)
