"""`python -m workroom.cli`: the `workroom` command."""

import sys

from workroom.cli import main

sys.exit(main())
