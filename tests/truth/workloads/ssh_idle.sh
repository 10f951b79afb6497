#!/bin/bash
# expect: idle
# side: outside
# why: an ssh session left open at a shell prompt, nobody typing: the session alone is not work
# debatable: the session is lost if the box sleeps; a developer may still expect it kept
. "$TRUTH_TOOLS/lib.sh"
python3 "$TRUTH_TOOLS/pty_drive.py" --log "$TRUTH_DIR/terminal.log" --ready '$ ' --started "$TRUTH_DIR/work_started" \
  -- $SSH_CMD
