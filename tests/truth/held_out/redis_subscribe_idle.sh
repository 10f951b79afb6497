#!/bin/bash
# expect: idle
# needs: redis-server redis-cli
# packages: redis-server redis-tools (Debian)
# stay: 30
# settle: hold+15
# proof: events.log ^subscribe$
# why: a deploy hook listener, `redis-cli SUBSCRIBE deploys | while read line; do ...; done`, on the box's Redis, nothing ever published: a subscriber between events is not work
. "$TRUTH_TOOLS/lib.sh"
start_redis
work_started
$REDIS --raw SUBSCRIBE deploys < /dev/null | while read -r line; do echo "$line" >> "$TRUTH_DIR/events.log"; done
