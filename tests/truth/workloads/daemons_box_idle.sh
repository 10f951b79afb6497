#!/bin/bash
# expect: idle
# remote: sshd
# needs: postgres psql initdb redis-server redis-cli jupyter-server vite ssh sshd curl
# stay: 40
# settle: 45
# proof: kernel.log "execution_state":
# why: a box with the everyday daemons a developer leaves running, all idle: PostgreSQL, Redis, a job worker on its queue, a notebook server with a kernel, a vite dev server, a tunnel to another host
. "$TRUTH_TOOLS/lib.sh"
start_postgres
start_redis
python3 "$TRUTH_TOOLS/worker.py" --socket "$TRUTH_DIR/redis.sock" --timeout 5 > "$TRUTH_DIR/worker.log" 2>&1 &
mkdir -p "$TRUTH_DIR/nb"
$JUPYTER > "$TRUTH_DIR/nb.log" 2>&1 &
make_vite_project
(cd "$TRUTH_DIR/web" && exec vite > "$TRUTH_DIR/vite.log" 2>&1) &
${SSH_REMOTE% *} -N -L 12222:10.200.0.1:22 ${SSH_REMOTE##* } < /dev/null > "$TRUTH_DIR/ssh.log" 2>&1 &
for _ in $(seq 150); do
  curl -sf -H 'Authorization: token truth' -X POST http://127.0.0.1:8888/api/kernels -d '{"name":"python3"}' \
    > "$TRUTH_DIR/kernel.log" 2>/dev/null && break
  sleep 0.4
done
for _ in $(seq 150); do curl -sf -o /dev/null http://127.0.0.1:5173/ && break; sleep 0.4; done
work_started; stay
