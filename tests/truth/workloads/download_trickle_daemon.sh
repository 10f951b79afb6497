#!/bin/bash
# expect: busy
# grace: 9 s: an answer is seen streaming from its second piece, 2-3 s after the first (and a loaded box starts python3 slowly)
# why: a download that trickles (50 bytes every 2 s, under the interface signal's rate), while an unrelated daemon sleeps between checks
. "$TRUTH_TOOLS/lib.sh"
start_daemon
work_started
$NET download --rate 25 --every 2 --seconds "$TRUTH_WORK"
work_done; stay
