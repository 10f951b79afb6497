#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 30
# why: a notebook server pinging its kernel's heartbeat every 3 s over loopback (time.sleep between), no cell running
. "$TRUTH_TOOLS/lib.sh"
$NET kernel --hb 9001 --shell 9002 &
exec $NET notebook --hb 9001 --shell 9002 --every 3
