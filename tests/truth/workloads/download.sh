#!/bin/bash
# expect: busy
# why: a package download across the box's interface (20 kB/s from a mirror): the job is waiting on the network
. "$TRUTH_TOOLS/lib.sh"
work_started
curl -s -o pkg.tar "http://$OUTSIDE:8000/stream?rate=20000&seconds=$TRUTH_WORK"
work_done; stay
