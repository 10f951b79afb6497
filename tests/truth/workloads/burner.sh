#!/bin/bash
# expect: busy
# why: a single process computing flat out (a long numeric job)
. "$TRUTH_TOOLS/lib.sh"
work_started
timeout "$TRUTH_WORK" python3 -c "while True: pass"
work_done; stay
