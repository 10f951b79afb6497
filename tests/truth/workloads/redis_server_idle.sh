#!/bin/bash
# expect: idle
# needs: redis-server redis-cli
# settle: hold+15
# proof: redis.log ready to accept connections
# why: a real Redis left running with nothing asking it (its 10 Hz housekeeping only): a cache waiting for clients is not work
. "$TRUTH_TOOLS/lib.sh"
start_redis
$REDIS set greeting hello > /dev/null
work_started; stay
