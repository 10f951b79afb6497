"""PyInstaller's entry script for the frozen app: exactly `workroom-app` (workroom.ui.main.main).

That main answers `--version` and `--self-test` (workroom.self_test.early_flags) before any window exists,
so the frozen app can be checked on a machine with no display. With WORKROOM_AS_PYTHON=1 the binary is the
Python that runs this computer's agent instead (workroom.platform.interpreter; docs/macos.md).
"""

import sys

from workroom.platform.interpreter import run_as_python, wants_python

if __name__ == "__main__":
    if wants_python():
        sys.exit(run_as_python(sys.argv[1:]))
    from workroom.ui.main import main

    sys.exit(main())
