#!/bin/bash
# expect: busy
# needs: flock python3
# packages: util-linux python3 (Debian)
# proof: deploy.log ^deploy: got the lock
# why: a deploy serialized with `flock deploy.lock ./deploy` waiting for the lock that the previous deploy (another process) holds for the work time: the job waits on a local lock
. "$TRUTH_TOOLS/lib.sh"
# The previous holder waits in a way that shows nothing itself (paused until an alarm), so only the waiter is judged.
flock "$TRUTH_DIR/deploy.lock" python3 -c "
import os, signal
open(os.environ['TRUTH_DIR'] + '/locked', 'w').close()
signal.signal(signal.SIGALRM, lambda *_: None); signal.alarm(int(float(os.environ['TRUTH_WORK']))); signal.pause()" < /dev/null &
for _ in $(seq 100); do [ -e "$TRUTH_DIR/locked" ] && break; sleep 0.1; done
work_started
flock "$TRUTH_DIR/deploy.lock" sh -c 'echo "deploy: got the lock"' > "$TRUTH_DIR/deploy.log" 2>&1 < /dev/null
work_done; stay
