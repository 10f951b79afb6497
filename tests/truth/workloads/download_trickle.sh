#!/bin/bash
# expect: busy
# why: a download that trickles (50 bytes every 2 s, under the interface signal's rate)
. "$TRUTH_TOOLS/lib.sh"

work_started
$NET download --rate 25 --every 2 --seconds "$TRUTH_WORK"
work_done; stay
