"""The GitHub workflows are checked here, where they cannot run: each file against GitHub's workflow schema
(check-jsonschema's vendored copy: no network), and the Mac workflow for what docs/macos.md says it does."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark.expression import Expression

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
MAC = ROOT / ".github" / "workflows" / "macos.yml"


def _load(path: Path) -> Any:
    from ruamel.yaml import YAML  # comes with check-jsonschema (the dev extra)

    return YAML(typ="safe").load(path.read_text())


def _validate(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           *map(str, paths)], capture_output=True, text=True, timeout=120)


def test_every_workflow_file_matches_githubs_schema() -> None:
    assert MAC in WORKFLOWS
    out = _validate(*WORKFLOWS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_schema_check_rejects_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(MAC.read_text().replace("runs-on: ${{ matrix.runner }}", "runs_on: ${{ matrix.runner }}"))
    out = _validate(broken)
    assert out.returncode == 1 and "'runs-on' is a required property" in out.stdout, out.stdout + out.stderr


def _markers() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {line.split(":", 1)[0] for line in config["tool"]["pytest"]["ini_options"]["markers"]}


def _selects(expression: str, marks: set[str]) -> bool:
    return Expression.compile(expression).evaluate(lambda name, **_: name in marks)


def test_the_portable_tiers_leave_out_what_needs_linux_and_the_mac_tier() -> None:
    expression = _load(MAC)["env"]["PORTABLE_TIERS"]
    words = set(expression.replace("(", " ").replace(")", " ").split()) - {"and", "or", "not"}
    assert words <= _markers(), words - _markers()  # --strict-markers would only say so on the Mac
    for marks in ({"unit"}, {"gui"}, {"integration"}, {"integration", "slow"}, {"gui", "integration"}):
        assert _selects(expression, marks), marks
    for marks in ({"unit", "linux"}, {"integration", "root"}, {"unit", "mac"}, {"integration", "mac"},
                  {"truth", "root"}, {"acceptance"}, {"gui", "linux"}):
        assert not _selects(expression, marks), marks


def test_the_mac_job_runs_the_tiers_on_both_architectures_then_builds_and_uploads() -> None:
    flow = _load(MAC)
    assert {"push", "pull_request"} <= set(flow["on"])
    job = flow["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    assert set(matrix["runner"]) == {"macos-15", "macos-15-intel"}  # Apple silicon, Intel
    assert "3.11" in matrix["python"] and flow["env"]["SHIP_PYTHON"] in matrix["python"]
    runs = [step.get("run", "") for step in job["steps"]]
    order = [next(i for i, r in enumerate(runs) if needle in r)
             for needle in ('./dev test -m "$PORTABLE_TIERS"', "build/build_app.py", "pytest -m mac",
                            "build/package_mac.sh")]
    assert order == sorted(order), "tiers, then the app, then the mac tier on it, then the packages"
    mac_tier = next(s for s in job["steps"] if "pytest -m mac" in s.get("run", ""))
    assert mac_tier["env"]["WORKROOM_TEST_APP"].endswith("build/out/dist/Workroom.app")
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["if-no-files-found"] == "error"


def test_the_release_signs_only_with_its_secrets_and_says_so_without() -> None:
    release = _load(MAC)["jobs"]["release"]
    assert "refs/tags/" in release["if"]
    configured = release["env"]["SIGNING_CONFIGURED"]
    steps = {s["name"]: s for s in release["steps"] if "name" in s}
    signing = [s for s in steps.values() if "sign_and_notarize.sh" in s.get("run", "")]
    assert signing and all(s["if"] == "env.SIGNING_CONFIGURED == 'true'" for s in signing)
    for secret in ("MACOS_SIGN_IDENTITY", "APPLE_ID", "APPLE_TEAM_ID", "APPLE_APP_PASSWORD"):
        assert f"secrets.{secret}" in configured
    unsigned = steps["Say that the release is not signed"]
    assert unsigned["if"] == "env.SIGNING_CONFIGURED != 'true'"
    assert "::warning title=Release not signed::" in unsigned["run"] and "GITHUB_STEP_SUMMARY" in unsigned["run"]
