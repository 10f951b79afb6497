#!/bin/bash
# expect: busy
# grace: 10 s: typing in a new pty shows only once the kernel's 8 s atime step passes its creation
# why: a person typing short commands in a shell, one every 3 s
. "$TRUTH_TOOLS/lib.sh"
work_started
python3 "$TRUTH_TOOLS/pty_drive.py" --type-every 0.5 --keys "ls      
" --type-for "$TRUTH_WORK" --marker "$TRUTH_DIR/work_done" -- bash --norc -i
