#!/bin/bash
# expect: busy
# remote: sshd
# needs: ssh sshd
# proof: deploy.log ^deploy: started
# why: the same silent remote command, with the client's keep-alive every 3 s answered by the server: the job still waits on it
. "$TRUTH_TOOLS/lib.sh"
work_started
${SSH_REMOTE% *} -o ServerAliveInterval=3 ${SSH_REMOTE##* } "echo deploy: started; sleep $TRUTH_WORK; echo deploy: done" > "$TRUTH_DIR/deploy.log" 2>&1 < /dev/null
work_done; stay
