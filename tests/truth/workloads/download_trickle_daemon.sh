#!/bin/bash
# expect: busy
# why: a download that trickles (50 bytes every 2 s, under the interface signal's rate), while an unrelated daemon sleeps between checks
. "$TRUTH_TOOLS/lib.sh"
start_daemon
work_started
$NET download --rate 25 --every 2 --seconds "$TRUTH_WORK"
work_done; stay
