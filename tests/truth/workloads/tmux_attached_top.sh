#!/bin/bash
# expect: busy
# why: top in tmux with a client attached by a user who typed `tmux attach`: someone is watching; detached after
# debatable: watching without typing counts only within the watch window after the last keystroke
# needs: tmux top
. "$TRUTH_TOOLS/lib.sh"
tmux -S tm new-session -d -x 120 -y 40 "top -d 1"
work_started
python3 "$TRUTH_TOOLS/pty_drive.py" --first-key --type-for "$TRUTH_WORK" --then-exit --marker "$TRUTH_DIR/work_done" \
  -- bash --norc -c 'read -r x; exec tmux -S tm attach'
