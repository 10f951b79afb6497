#!/bin/bash
# expect: busy
# why: `sleep N && deploy`: a job waiting on a timer is a job (the first 3 s of a sleep are not counted)
. "$TRUTH_TOOLS/lib.sh"
work_started
sleep "$TRUTH_WORK" && echo deployed
work_done; stay
