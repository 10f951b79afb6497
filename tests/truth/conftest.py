"""The truth tier runs every workload once per session (in parallel) and checks each result."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness


@pytest.fixture(scope="session")
def truth_results(request: pytest.FixtureRequest) -> Iterator[dict[str, harness.Result]]:
    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces and a test user (CI runs as root)")
    timings = harness.selected_timings()
    jobs = int(os.environ.get("WR_TRUTH_JOBS", "8"))
    results = harness.run_suite(harness.all_workloads(), timings, jobs)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    text = harness.table(results, timings)
    if reporter is not None:
        reporter.write_line("")
        for line in text.splitlines():
            reporter.write_line(line)
    yield {r.name: r for r in results}
