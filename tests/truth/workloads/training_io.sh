#!/bin/bash
# expect: busy
# why: a training loop: 1 s of compute per step, then a 6 s wait for the next batch from a remote data server
. "$TRUTH_TOOLS/lib.sh"
work_started
python3 - <<'PY'
import os, socket, time
end = time.monotonic() + float(os.environ["TRUTH_WORK"])
s = socket.create_connection((os.environ["OUTSIDE"], 5432))
f = s.makefile("rwb")
while time.monotonic() < end:
    t = time.monotonic() + 1.0
    while time.monotonic() < t:
        sum(i * i for i in range(1000))
    f.write(b"SLEEP 6\n"); f.flush(); f.readline()
PY
work_done; stay
