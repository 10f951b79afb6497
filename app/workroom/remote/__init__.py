"""remote layer (see docs/architecture.md)."""

import sys

# paramiko imports `invoke` (about 65 ms of a command's start-up, more on a busy machine) only for its own
# ssh_config reader's `Match exec`, which this app never uses (remote/ssh_config_file.py reads ssh_config).
# Marked absent before paramiko is first imported (every paramiko import is in this package), paramiko skips it.
sys.modules.setdefault("invoke", None)  # type: ignore[arg-type]
