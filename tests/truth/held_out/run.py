"""Run the held-out workloads (this folder's *.sh) alone through the truth harness (which runs them with
`../workloads/` otherwise): this points `harness.WORKLOADS` here, so the two folders it reads are this one, before
calling its own `main` (same options: -k, --jobs, --keep).

    sudo .venv/bin/python tests/truth/held_out/run.py -k NAME --jobs 1 [--keep] [--agent REV]

`--agent REV` runs the agent as committed at REV (`git archive REV agent_bundle`, pointed to by `harness.AGENT_SRC`)
instead of the working tree's, so a record is of one known agent while the tree changes.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
import harness  # noqa: E402  (tests/truth/harness.py)

harness.WORKLOADS = HERE


def pinned_agent(rev: str) -> Path:
    """agent_bundle/ as committed at `rev`, in a fresh temporary folder (its `agent_bundle`)."""
    out = Path(tempfile.mkdtemp(prefix="wr-held-out-agent-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, "agent_bundle"],
                             check=True, capture_output=True, timeout=60).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True, timeout=60)
    return out


def main(argv: list[str]) -> int:
    tmp = None
    if "--agent" in argv:
        i = argv.index("--agent")
        rev = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
        tmp = pinned_agent(rev)
        harness.AGENT_SRC = tmp / "agent_bundle"
        short = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev], capture_output=True, text=True,
                               timeout=30).stdout.strip()
        print(f"agent: {rev} ({short}), from {harness.AGENT_SRC}", flush=True)
    try:
        return harness.main(argv)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
