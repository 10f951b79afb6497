#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 40
# why: a metrics agent pushing one line every 10 s to a collector that never answers: a daemon's heartbeat
. "$TRUTH_TOOLS/lib.sh"
exec $NET metrics --every 10
