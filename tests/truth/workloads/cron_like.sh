#!/bin/bash
# expect: busy
# why: a cron-like scheduler (ticking every second) that runs a job: the job is work, the ticking after it is not
. "$TRUTH_TOOLS/lib.sh"
exec python3 -c "
import os, subprocess, time
t0 = time.monotonic(); ran = False
while True:
    time.sleep(1)
    if not ran and time.monotonic() - t0 > 3:
        ran = True
        open('work_started', 'w').close()
        subprocess.run(['python3', '-c', 'import time\nend = time.monotonic() + %s\nwhile time.monotonic() < end: pass' % os.environ['TRUTH_WORK']])
        open('work_done', 'w').close()
"
