#!/bin/bash
# expect: idle
# stay: 40
# why: a metrics agent pushing one line every 10 s to a collector that never answers: a daemon's heartbeat
. "$TRUTH_TOOLS/lib.sh"
exec $NET metrics --every 10
