#!/bin/bash
# expect: idle
# why: htop left open in a detached tmux session redraws its meters every 1.5 s into a pane nobody looks at
# needs: tmux htop
. "$TRUTH_TOOLS/lib.sh"
tmux -S tm new-session -d -x 120 -y 40 "htop -d 15"
work_started; stay
