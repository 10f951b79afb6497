"""A week in an hour, CI's five minutes of it: the real app (`run_app`, offscreen, its link serving) against 20
loopback hosts of real sshds, one of them dropped (its sshd stopped, every process of its user killed) and back
every 20 s, through bench/soak_bench.py, whose exit code is the verdict.

It fails when, after the last return, a host is not live; when the resident size at the end is over 1.05 x the size
after the first quarter (the long run in bench/README.md also holds the second half's slope to 3 MB an hour; five
minutes are too short for a slope); when the fewest descriptors or threads held in the last quarter pass the fewest
in the second by more than one (a reconnect in flight holds a few more for a moment; a leak raises the floor).
`workroom status` through the link is timed all along and printed; its p99 is not judged here (CI runs three other
tiers beside).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.root]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: each host logs in as a throwaway test user")
def test_the_app_holds_flat_through_a_host_dropped_every_20_s(tmp_path: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join(str(ROOT / p) for p in ("app", "agent_bundle")))
    env.pop("WORKROOM_HOME", None)  # the bench makes its own
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "soak_bench.py"), "--minutes", "5", "--every", "20",
                           "--hosts", "20"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=560)
    assert done.stdout.strip(), f"the soak printed nothing:\n{done.stderr[-3000:]}"
    figures = json.loads(done.stdout[done.stdout.index("{"):])
    print(json.dumps({k: v for k, v in figures.items() if k != "series_t_rss_fds_threads"}))
    assert figures["drops"] >= 13, figures
    assert figures["status_ms"]["failed"] == 0, figures["status_ms"]
    failed = [name for name, ok in figures["checks"].items() if not ok]
    assert not failed and done.returncode == 0, f"{failed}: {json.dumps(figures, indent=1)}"
