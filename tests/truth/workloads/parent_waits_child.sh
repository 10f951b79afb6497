#!/bin/bash
# expect: busy
# why: a build script waiting on its busy child (the parent is in wait(), the child computes)
. "$TRUTH_TOOLS/lib.sh"
work_started
bash -c 'python3 -c "
import os, time
end = time.monotonic() + float(os.environ[\"TRUTH_WORK\"])
while time.monotonic() < end: pass"'
work_done; stay
