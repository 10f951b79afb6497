#!/bin/bash
# expect: idle
# why: a daemon spending 50 ms of CPU every 10 s (an indexer's heartbeat): 0.5 % of a core is not work
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 -c "
import time
while True:
    end = time.monotonic() + 0.05
    while time.monotonic() < end: pass
    time.sleep(10)
"
