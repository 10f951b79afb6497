#!/bin/bash
# expect: idle
# why: a polling file watcher (stat 300 files every second, as watchdog's PollingObserver does), nothing changing
. "$TRUTH_TOOLS/lib.sh"
mkdir -p src; for i in $(seq 1 300); do : > src/f$i.py; done
work_started
exec python3 -c "
import os, time
while True:
    for n in os.listdir('src'): os.stat('src/' + n)
    time.sleep(1)
"
