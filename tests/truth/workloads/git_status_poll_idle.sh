#!/bin/bash
# expect: idle
# needs: git
# settle: hold+15
# proof: poll.log ^## main
# why: an editor's git integration running real `git status` on a small repository every 5 s: a daemon's heartbeat, not work
. "$TRUTH_TOOLS/lib.sh"
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
git init -q -b main "$TRUTH_DIR/repo" && cd "$TRUTH_DIR/repo"
seq 200 > a.txt && git add a.txt && git commit -qm one
work_started
exec python3 -c "
import subprocess, time
while True:
    out = subprocess.run(['git', 'status', '--short', '--branch'], capture_output=True, text=True).stdout
    open('$TRUTH_DIR/poll.log', 'w').write(out)
    time.sleep(5)"
