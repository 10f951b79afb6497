#!/bin/bash
# expect: busy
# needs: redis-server redis-cli
# proof: cli.log ^OK$
# why: a job's redis-cli waiting on a real Redis over its Unix socket while the server works on its command (DEBUG SLEEP): the job waits on the server
. "$TRUTH_TOOLS/lib.sh"
start_redis
start_daemon
work_started
$REDIS DEBUG SLEEP "$TRUTH_WORK" > "$TRUTH_DIR/cli.log" 2>&1
work_done; stay
