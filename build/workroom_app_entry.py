"""PyInstaller's entry script for the frozen app: exactly `workroom-app` (workroom.ui.main.main).

That main answers `--version` and `--self-test` (workroom.self_test.early_flags) before any window exists,
so the frozen app can be checked on a machine with no display.
"""

import sys

from workroom.ui.main import main

if __name__ == "__main__":
    sys.exit(main())
