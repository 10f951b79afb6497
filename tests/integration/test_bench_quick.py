"""Every benchmark still runs: each `bench/*.py` (found by glob, so a new one is picked up) with `--quick`.

No figure is asserted (the machine running the suite is shared): a benchmark that hangs, crashes or lost its
`--quick` mode fails here instead of rotting until someone measures again.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted((ROOT / "bench").glob("*.py"))
QUICK_TIMEOUT_SECONDS = 100
"""What a `--quick` run may take, unless its script says `QUICK_SECONDS = N` (one that installs its software the first
time, as the editor bench's code-server)."""


def quick_seconds(bench: Path) -> int:
    found = re.search(r"^QUICK_SECONDS = (\d+)", bench.read_text(), re.MULTILINE)
    return int(found.group(1)) if found else QUICK_TIMEOUT_SECONDS


def test_there_are_benchmarks() -> None:
    assert BENCHES, "bench/ has no benchmark scripts"


@pytest.mark.timeout(max(quick_seconds(b) for b in BENCHES) + 20 if BENCHES else QUICK_TIMEOUT_SECONDS)
@pytest.mark.parametrize("bench", BENCHES, ids=[p.stem for p in BENCHES])
def test_each_benchmark_runs_quick(bench: Path, tmp_path: Path) -> None:
    if "--quick" not in bench.read_text():
        pytest.fail(f"{bench.name} has no --quick mode")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WORKROOM_HOME=str(tmp_path / "home"),
               PYTHONPATH=os.pathsep.join(str(ROOT / p) for p in ("app", "agent_bundle")))
    done = subprocess.run([sys.executable, str(bench), "--quick"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=quick_seconds(bench))
    if done.returncode == 2 and "run as root" in done.stderr and os.geteuid() != 0:
        pytest.skip(f"{bench.name} needs root")
    assert done.returncode == 0, f"{bench.name} --quick failed ({done.returncode}):\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{bench.name} --quick printed nothing"
