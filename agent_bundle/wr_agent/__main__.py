"""`python3 -m wr_agent ...` and the zipapp's entry point."""

import sys

from wr_agent.cli import main

if __name__ == "__main__":
    sys.exit(main())
