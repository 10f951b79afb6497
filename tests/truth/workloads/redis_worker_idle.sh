#!/bin/bash
# expect: idle
# needs: redis-server redis-cli
# stay: 30
# settle: hold+15
# proof: worker.log no job
# why: a job worker on a real Redis's Unix socket with an empty queue: a blocking pop answered nothing every 5 s, asked again
. "$TRUTH_TOOLS/lib.sh"
start_redis
work_started
exec python3 "$TRUTH_TOOLS/worker.py" --socket "$TRUTH_DIR/redis.sock" --timeout 5 > "$TRUTH_DIR/worker.log" 2>&1
