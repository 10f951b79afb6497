#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 30
# why: an app's idle database pool: 5 connections, SELECT 1 on each every 10 s (pre-ping), no request
. "$TRUTH_TOOLS/lib.sh"
exec $NET pool --conns 5 --check 10
