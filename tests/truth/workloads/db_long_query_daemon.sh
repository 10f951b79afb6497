#!/bin/bash
# expect: busy
# why: a job waiting on one long query (no CPU, no bytes) while an unrelated daemon sleeps between checks
. "$TRUTH_TOOLS/lib.sh"
start_daemon
work_started
$NET query --seconds "$TRUTH_WORK"
work_done; stay
