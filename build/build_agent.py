"""Build the agent zipapp: `python build/build_agent.py [--out build/out/wr-agent.pyz]`.

A thin wrapper over `python -m wr_agent bundle --out FILE` (the same function the agent uses for its own
build hash), so the file built here has the sha256 the agent reports. Prints that sha256.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "out", "wr-agent.pyz"))
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "agent_bundle"))
    from wr_agent import bundle

    print(bundle.write_bundle(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
