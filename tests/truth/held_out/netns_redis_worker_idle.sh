#!/bin/bash
# expect: idle
# needs: unshare ip redis-server redis-cli
# packages: redis-server redis-tools iproute2 util-linux (Debian)
# stay: 30
# settle: hold+15
# proof: worker.log ^worker: waiting
# why: a queue worker in a rootless container's own network (`unshare -rn`) blocked in `redis-cli -h 127.0.0.1 BLPOP jobs 0` on the Redis beside it over TCP, its queue empty and nothing ever pushed: a worker between jobs is a listener, whatever network namespace it runs in
. "$TRUTH_TOOLS/lib.sh"
# Written before the next rule (round 2 of the held-out set, RESULTS_BEFORE.md): the idle twin of a step waiting in
# another network namespace, which that namespace's /proc table alone (no tcp_info) cannot tell from a query.
unshare -rn bash -c '
ip link set lo up
redis-server --port 6379 --bind 127.0.0.1 --dir "$TRUTH_DIR" --save "" --appendonly no \
  --logfile "$TRUTH_DIR/redis.log" --daemonize no &
for _ in $(seq 100); do [ "$(redis-cli -h 127.0.0.1 ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
. "$TRUTH_TOOLS/lib.sh"
work_started
echo "worker: waiting for jobs" > "$TRUTH_DIR/worker.log"
while job=$(redis-cli -h 127.0.0.1 --raw BLPOP jobs 0 < /dev/null); do
  echo "worker: ran ${job##*$'"'"'\n'"'"'}" >> "$TRUTH_DIR/worker.log"
done
'
