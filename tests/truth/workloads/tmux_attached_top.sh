#!/bin/bash
# expect: busy
# why: top in tmux with a client attached by a user who typed `tmux attach`: someone is watching; detached after
# work: 35 s: longer than the keystroke window plus the hold, so only the attached client keeps it BUSY at the end
# debatable: watching without typing counts only within the watch window after the last keystroke
# needs: tmux top
. "$TRUTH_TOOLS/lib.sh"
tmux -S tm new-session -d -x 120 -y 40 "top -d 1"
# The user opens a terminal and, 9 s later, types the command: a pty's first keystroke is visible only once
# the kernel's 8-second atime granularity has passed its creation time.
python3 "$TRUTH_TOOLS/pty_drive.py" --first-key 9 --started "$TRUTH_DIR/work_started" --type-for "$TRUTH_WORK" \
  --then-exit --marker "$TRUTH_DIR/work_done" -- bash --norc -c 'read -r x; exec tmux -S tm attach'
