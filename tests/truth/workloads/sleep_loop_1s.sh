#!/bin/bash
# expect: idle
# why: `while :; do date >> log; sleep 1; done`: a 1-second heartbeat loop, indistinguishable from a daemon
# debatable: a user's own polling loop; with a longer sleep (>= 3 s) it counts as a job waiting
. "$TRUTH_TOOLS/lib.sh"
work_started
while :; do date >> clock.log; sleep 1; done
