#!/bin/bash
# expect: idle
# why: `watch -n 1 date` left in a terminal: a 1-second heartbeat, the classic busy-for-ever case
# needs: watch
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 "$TRUTH_TOOLS/pty_drive.py" -- watch -n 1 date
