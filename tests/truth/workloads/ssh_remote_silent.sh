#!/bin/bash
# expect: busy
# remote: sshd
# needs: ssh sshd
# proof: deploy.log ^deploy: started
# why: a deploy running a remote command over real OpenSSH that prints one line, then nothing until it ends: the job waits on it
. "$TRUTH_TOOLS/lib.sh"
work_started
$SSH_REMOTE "echo deploy: started; sleep $TRUTH_WORK; echo deploy: done" > "$TRUTH_DIR/deploy.log" 2>&1 < /dev/null
work_done; stay
