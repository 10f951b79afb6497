#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 30
# why: a --watch-style client (kubectl get pods --watch): the initial list, then nothing ever arrives
. "$TRUTH_TOOLS/lib.sh"
exec $NET watch --keepalive 0
