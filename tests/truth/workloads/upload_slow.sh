#!/bin/bash
# expect: busy
# why: an upload to a receiver taking 256 bytes every 2 s: the send queue stays full, few bytes move
. "$TRUTH_TOOLS/lib.sh"

work_started
$NET upload --seconds "$TRUTH_WORK"
work_done; stay
