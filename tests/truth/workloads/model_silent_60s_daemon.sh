#!/bin/bash
# expect: busy
# work: 75
# why: a model call that sends nothing for 60 s, then streams its answer, while an unrelated daemon sleeps between checks
. "$TRUTH_TOOLS/lib.sh"
start_daemon
work_started
$NET model-call --think 60 --every 2 --seconds $(( ${TRUTH_WORK%.*} - 60 ))
work_done; stay
