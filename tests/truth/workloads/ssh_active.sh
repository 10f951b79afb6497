#!/bin/bash
# expect: busy
# side: outside
# grace: 10 s: keys typed in a new pty show only once the kernel's 8 s atime step passes its creation
# why: a developer in an ssh session typing (a key a second): a person is at the box
. "$TRUTH_TOOLS/lib.sh"
python3 "$TRUTH_TOOLS/pty_drive.py" --log "$TRUTH_DIR/terminal.log" --ready '$ ' --started "$TRUTH_DIR/work_started" \
  --type-every 1 --keys "ls
" --type-for "$TRUTH_WORK" --marker "$TRUTH_DIR/work_done" -- $SSH_CMD
