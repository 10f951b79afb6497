#!/bin/bash
# expect: idle
# why: top left running in a detached tmux session: it writes ~900 B/s into a pane nobody looks at
# needs: tmux top
. "$TRUTH_TOOLS/lib.sh"
tmux -S tm new-session -d -x 120 -y 40 "top -d 1"
work_started; stay
