#!/bin/bash
# expect: busy
# why: an upload to a receiver taking 256 bytes every 2 s: the send queue stays full, few bytes move, while an unrelated daemon sleeps between checks
. "$TRUTH_TOOLS/lib.sh"
start_daemon
work_started
$NET upload --seconds "$TRUTH_WORK"
work_done; stay
