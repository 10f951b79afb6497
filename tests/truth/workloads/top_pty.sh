#!/bin/bash
# expect: idle
# why: top in a terminal nobody has typed in: refreshing output is not work
# debatable: a wall display someone glances at would want it awake
# needs: top
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 "$TRUTH_TOOLS/pty_drive.py" -- top -d 1
