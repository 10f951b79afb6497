#!/bin/bash
# expect: busy
# why: a test run (unittest): each test computes a little and waits a little; the developer waits for the result
. "$TRUTH_TOOLS/lib.sh"
cat > test_many.py <<'PY'
import time, unittest
class T(unittest.TestCase):
    pass
def make(i):
    def t(self):
        end = time.monotonic() + 0.15
        while time.monotonic() < end:
            pass
        time.sleep(0.3)
    return t
for i in range(400):
    setattr(T, "test_%03d" % i, make(i))
PY
work_started
timeout "$TRUTH_WORK" python3 -m unittest -q test_many >/dev/null 2>&1
work_done; stay
