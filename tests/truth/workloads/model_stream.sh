#!/bin/bash
# expect: busy
# grace: 9 s: an answer is seen streaming from its second piece, 2-3 s after the first (and a loaded box starts python3 slowly)
# why: a model call whose answer streams a few bytes every 3 s (an agent waiting on tokens)
. "$TRUTH_TOOLS/lib.sh"

work_started
$NET model-call --every 3 --seconds "$TRUTH_WORK"
work_done; stay
