"""The GitHub workflows are checked here, where they cannot run: each file against GitHub's workflow schema
(check-jsonschema's vendored copy: no network), and the Mac workflow for what docs/macos.md says it does."""

from __future__ import annotations

import re
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


# -- the four rules every workflow is held to (docs/packaging.md, "The release workflow") -----------------------

PINNED = re.compile(r"^\s*(?:-\s*)?uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s*(v\d+(?:\.\d+)*)\s*$")
APPLE_TOOLS = ("security ", "codesign ", "xcrun ", "notarytool", "sign_and_notarize.sh")
RUNS_THE_APP = ("Contents/MacOS/", "WORKROOM_TEST_APP", "pytest", "build_app.py", "release-venv", "package_mac.sh")
REQUIREMENTS = ROOT / "build" / "requirements-release.txt"


def unpinned_actions(text: str) -> list[str]:
    """Every `uses:` that is not an action pinned by a full commit with its tag in a comment beside it."""
    return [line.strip() for line in text.splitlines()
            if re.match(r"^\s*(-\s*)?uses:", line) and not line.strip().split(None, 1)[-1].startswith("./")
            and not PINNED.match(line)]


def kept_tokens(flow: Any) -> list[str]:
    """Every checkout that would leave the job's token in .git/config."""
    return [f"{name}: {step['uses']}" for name, job in flow["jobs"].items() for step in job.get("steps", [])
            if step.get("uses", "").startswith("actions/checkout@")
            and (step.get("with") or {}).get("persist-credentials") is not False]


def _secrets_in(value: Any) -> bool:
    return "secrets." in str(value)


def misplaced_secrets(flow: Any) -> list[str]:
    """Secrets anywhere but the environment of a step that runs Apple's tools and nothing of the built app. A job's
    environment may only test whether a secret is set (`secrets.X != ''`), which holds no secret."""
    found = [f"workflow env {k}" for k, v in (flow.get("env") or {}).items() if _secrets_in(v)]
    for name, job in flow["jobs"].items():
        for key, value in (job.get("env") or {}).items():
            text = re.sub(r"secrets\.\w+\s*!=\s*''", "", str(value))
            if "secrets." in text:
                found.append(f"{name} env {key}")
        for step in job.get("steps", []):
            label = f"{name}: {step.get('name') or step.get('uses')}"
            run = step.get("run", "")
            if _secrets_in(step.get("with")) or _secrets_in(run) or _secrets_in(step.get("if")):
                found.append(f"{label} (secrets outside its env)")
            if not _secrets_in(step.get("env")):
                continue
            if "uses" in step or not any(tool in run for tool in APPLE_TOOLS):
                found.append(f"{label} (secrets in a step that runs no Apple tool)")
            elif any(mark in run for mark in RUNS_THE_APP):
                found.append(f"{label} (secrets in a step that runs the built app)")
    return found


def _requirements() -> dict[str, list[str]]:
    """name -> the lines of each requirement in requirements-release.txt (a name may be pinned once per marker)."""
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in REQUIREMENTS.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            current = [line]
            name = re.split(r"[=<>!~ ;\\]", line, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-")
            out.setdefault(name, []).append("")
        else:
            current.append(line)
        out[name][-1] = "\n".join(current)
    return out


def _name(requirement: str) -> str:
    return re.split(r"[=<>!~ ;\[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-").replace(".", "-")


def test_every_action_is_pinned_by_its_commit_with_the_tag_beside_it() -> None:
    for path in WORKFLOWS:
        assert unpinned_actions(path.read_text()) == [], path.name
    assert unpinned_actions("      - uses: actions/checkout@v4\n") == ["- uses: actions/checkout@v4"]
    assert unpinned_actions("      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262\n")  # no tag
    sha = "      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262  # v4.4.0\n"
    assert unpinned_actions(sha) == []


def test_no_checkout_leaves_the_token_in_git_config() -> None:
    for path in WORKFLOWS:
        assert kept_tokens(_load(path)) == [], path.name
    assert kept_tokens({"jobs": {"j": {"steps": [{"uses": "actions/checkout@x"}]}}}) == ["j: actions/checkout@x"]


def test_secrets_reach_only_the_step_that_runs_apples_tools() -> None:
    for path in WORKFLOWS:
        assert misplaced_secrets(_load(path)) == [], path.name
    release = _load(MAC)["jobs"]["release"]
    holders = [s for s in release["steps"] if _secrets_in(s.get("env"))]
    assert {s["name"] for s in holders} == {"Import the Developer ID certificate into a keychain of this job",
                                            "Sign, notarise and staple"}
    runner = next(s for s in release["steps"] if "Contents/MacOS/" in s.get("run", ""))
    assert "env" not in runner and runner["if"] == "env.SIGNING_CONFIGURED == 'true'"
    # The old single step (sign, then run the app's own binary with the Apple ID in its environment) is refused:
    old = {"jobs": {"release": {"steps": [{"name": "Sign and check", "env": {"APPLE_ID": "${{ secrets.APPLE_ID }}"},
                                           "run": 'build/sign_and_notarize.sh "$app"\n"$app/Contents/MacOS/x" -'}]}}}
    assert misplaced_secrets(old) == ["release: Sign and check (secrets in a step that runs the built app)"]
    leaky = {"jobs": {"j": {"env": {"X": "${{ secrets.APPLE_ID }}"}, "steps": [
        {"name": "s", "env": {"T": "${{ secrets.T }}"}, "run": "make"}]}}}
    assert misplaced_secrets(leaky) == ["j env X", "j: s (secrets in a step that runs no Apple tool)"]


def test_the_app_is_built_from_requirements_pinned_by_hash() -> None:
    job = _load(MAC)["jobs"]["test"]
    runs = [step.get("run", "") for step in job["steps"]]
    install = next(i for i, r in enumerate(runs) if "build/requirements-release.txt" in r)
    build = next(i for i, r in enumerate(runs) if "build/build_app.py" in r)
    assert install < build
    for flag in ("--require-hashes", "--no-deps", "--only-binary :all:"):
        assert flag in runs[install], flag
    assert "release-venv/bin/python -m pip install" in runs[install]
    assert runs[build].split()[0] == "build/out/release-venv/bin/python"  # the hashed venv builds the app
    pinned = _requirements()
    for name, entries in pinned.items():
        for entry in entries:
            first = entry.splitlines()[0]
            assert re.match(rf"^{re.escape(first.split('==')[0])}==\S+", first), f"{name} is not pinned: {first}"
            assert "--hash=sha256:" in entry, f"{name} has no hash"
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = {_name(r) for r in config["project"]["dependencies"]}
    wanted |= {_name(line) for line in (ROOT / "build" / "requirements-release.in").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert wanted <= set(pinned), f"not in build/requirements-release.txt (regenerate it): {wanted - set(pinned)}"
