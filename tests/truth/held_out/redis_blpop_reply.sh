#!/bin/bash
# expect: busy
# remote: sshd
# needs: redis-server redis-cli ssh sshd
# packages: redis-server redis-tools openssh-client openssh-server (Debian)
# proof: cli.log ^rendered:42$
# why: a script that queued a job for a worker on another host (LPUSH) and now blocks in `redis-cli BLPOP result:42` on the box's Redis for the answer, which comes when the worker finishes: the job waits on a result it asked for
. "$TRUTH_TOOLS/lib.sh"
# The box's own Redis on its Unix socket (the job's side) and on eth0 (the remote worker's side).
BOX=10.200.0.2  # the box's eth0 (harness.INSIDE_ADDR)
redis-server --port 6379 --bind "$BOX" --protected-mode no \
  --unixsocket "$TRUTH_DIR/redis.sock" --unixsocketperm 700 --dir "$TRUTH_DIR" --save "" --appendonly no \
  --logfile "$TRUTH_DIR/redis.log" --daemonize no &
for _ in $(seq 100); do [ "$($REDIS ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
# The worker, on the other host: pops one job, renders it for the work time, pushes the result.
$SSH_REMOTE "setsid bash -c 'job=\$(redis-cli -h $BOX --raw BLPOP jobs 0 | tail -1); sleep ${TRUTH_WORK%.*}; redis-cli -h $BOX LPUSH result:42 rendered:\${job#render:}' > $TRUTH_DIR/worker.log 2>&1 < /dev/null &" < /dev/null
for _ in $(seq 100); do $REDIS client list | grep -q 'cmd=blpop' && break; sleep 0.1; done
start_daemon
work_started
$REDIS LPUSH jobs render:42 > /dev/null
$REDIS --raw BLPOP result:42 300 > "$TRUTH_DIR/cli.log" 2>&1 < /dev/null
work_done; stay
