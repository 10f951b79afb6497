"""`python -m workroom.simbox ...`: see workroom.simbox.cli."""

import sys

from workroom.simbox.cli import main

sys.exit(main())
