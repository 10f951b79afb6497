#!/bin/bash
# expect: idle
# why: a new terminal with a shell nobody typed in: a fresh pty's atime is its creation time, not a keystroke
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 "$TRUTH_TOOLS/pty_drive.py" -- bash --norc -i
