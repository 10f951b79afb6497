#!/bin/bash
# expect: idle
# why: `tail -f` on a quiet log in a terminal: waiting for lines that do not come
. "$TRUTH_TOOLS/lib.sh"
touch app.log
work_started
exec python3 "$TRUTH_TOOLS/pty_drive.py" -- tail -f app.log
