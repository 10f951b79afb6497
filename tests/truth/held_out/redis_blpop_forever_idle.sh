#!/bin/bash
# expect: idle
# needs: redis-server redis-cli
# packages: redis-server redis-tools (Debian)
# stay: 30
# settle: hold+15
# proof: worker.log ^worker: waiting
# why: a shell queue worker (`while job=$(redis-cli BLPOP jobs 0)`) on the box's Redis, its queue empty and nothing ever pushed: a worker between jobs is a listener, not work
. "$TRUTH_TOOLS/lib.sh"
# Unlike workloads/redis_worker_idle (a client re-asking every 5 s), this pop never times out (`0`: block for ever),
# the way many shell and small Python workers are written; the shell reads redis-cli's output through $(...).
start_redis
work_started
echo "worker: waiting for jobs" > "$TRUTH_DIR/worker.log"
while job=$($REDIS --raw BLPOP jobs 0 < /dev/null); do
  echo "worker: ran ${job##*$'\n'}" >> "$TRUTH_DIR/worker.log"
done
