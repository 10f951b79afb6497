#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 40
# why: a dev server's HMR websocket to a client, idle: a ping every 5 s answered by a pong, no update
. "$TRUTH_TOOLS/lib.sh"
$NET ws-server --port 5173 --ping 5 &
exec $NET ws-client --port 5173
