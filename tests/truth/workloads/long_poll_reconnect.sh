#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 45
# why: the same listener opening a new connection for every poll: the peer, not the socket, makes it the same wait
# debatable: as long_poll_idle
. "$TRUTH_TOOLS/lib.sh"
exec $NET long-poll --wait 15 --reconnect
