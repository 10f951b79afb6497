"""`python -m simbox ...`: see simbox.cli."""

import sys

from simbox.cli import main

sys.exit(main())
