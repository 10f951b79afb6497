"""What ships and what does not: the app's wheel carries no development tool, and the simulator is a
separate distribution (installed by the dev extra) with its own command.

The wheels are built here, offline, with the hatchling the dev extra installs (about a second each); the
PyInstaller bundle takes what the wheel's package tree holds (`collect_submodules("workroom")`) and excludes
`simbox` outright, and the slow build test in test_packaging.py checks the frozen app itself.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _build_wheel(project: Path, out: Path) -> zipfile.ZipFile:
    pytest.importorskip("hatchling", reason="hatchling comes with the dev extra: run ./dev setup")
    proc = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)],
                          cwd=project, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob("*.whl")
    return zipfile.ZipFile(wheel)


@pytest.fixture(scope="module")
def app_wheel(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    with _build_wheel(ROOT, tmp_path_factory.mktemp("app-wheel")) as wheel:
        return wheel.namelist()


def _modules(names: list[str]) -> set[str]:
    """Dotted module names of the .py files in a wheel."""
    return {n[:-3].replace("/", ".").removesuffix(".__init__") for n in names if n.endswith(".py")}


def test_the_app_wheel_holds_the_app_and_its_agent(app_wheel: list[str]) -> None:
    modules = _modules(app_wheel)
    assert {"workroom.cli", "workroom.ui.main", "workroom.providers.simbox"} <= modules
    assert any(n.startswith("workroom/_agent_src/wr_agent/") for n in app_wheel)


def test_the_app_wheel_has_no_simulator(app_wheel: list[str]) -> None:
    # The simbox *provider* (how the app talks to a simulated box) ships; the simulator itself does not.
    offenders = sorted(m for m in _modules(app_wheel) if m == "simbox" or m.startswith(("simbox.", "workroom.simbox")))
    assert offenders == []


DEMO_STATES_IN_APP = (ROOT / "app" / "workroom" / "ui" / "demo_states.py").exists()


@pytest.mark.xfail(DEMO_STATES_IN_APP, strict=True,
                   reason="ui/demo_states.py still lives in the app; it moves beside the screenshot script")
def test_the_app_wheel_has_no_screenshot_demo_states(app_wheel: list[str]) -> None:
    assert sorted(m for m in _modules(app_wheel) if m.rsplit(".", 1)[-1] == "demo_states") == []


def test_the_simulator_is_its_own_distribution_with_its_command(tmp_path: Path) -> None:
    with _build_wheel(ROOT / "tools" / "simbox", tmp_path) as wheel:
        names = wheel.namelist()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = wheel.read(entry_points).decode()
    modules = _modules(names)
    assert {"simbox", "simbox.cli", "simbox.daemon", "simbox.sshd_config"} <= modules
    assert not any(m.startswith("workroom") for m in modules)
    assert "workroom-simbox = simbox.cli:main" in scripts


def test_the_dev_extra_installs_the_simulator() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dev = project["project"]["optional-dependencies"]["dev"]
    assert "workroom-simbox @ {root:uri}/tools/simbox" in dev
    assert "simbox" not in " ".join(project["project"]["scripts"].values())


def test_the_shipped_cli_has_no_simbox_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "workroom.cli", "simbox", "status"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice: 'simbox'" in proc.stderr, proc.stderr
