#!/bin/bash
# expect: busy
# grace: 10 s: typing in a new pty shows only once the kernel's 8 s atime step passes its creation
# why: a person typing in vim (a key every 2 s); after they stop, an open editor alone is not work
# needs: vim
. "$TRUTH_TOOLS/lib.sh"
work_started
python3 "$TRUTH_TOOLS/pty_drive.py" --type-every 2 --type-for "$TRUTH_WORK" --marker "$TRUTH_DIR/work_done" -- vim -n -u NONE notes.txt
