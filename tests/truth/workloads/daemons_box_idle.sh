#!/bin/bash
# expect: idle
# remote: sshd
# needs: postgres psql initdb redis-server redis-cli jupyter-server vite ssh sshd curl
# stay: 40
# settle: 45
# proof: kernel-ready.log kernel ready
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
# The kernel's start-up (IPython's imports) is not an idle daemon: on a loaded machine it took CPU well into the
# stay. It is done when the kernel answers a client's kernel_info request (jupyter_client's wait_for_ready, over
# the kernel's connection file, as a notebook tab opened once and closed); its reply's status "idle" is then also
# the server's view of the kernel.
kernel=$(sed -n 's/.*"id": "\([^"]*\)".*/\1/p' "$TRUTH_DIR/kernel.log")
"$(dirname "$(command -v jupyter-server)")/python" - "$HOME/.local/share/jupyter/runtime/kernel-$kernel.json" \
  > "$TRUTH_DIR/kernel-ready.log" 2>&1 <<'PY'
import sys
from jupyter_client import BlockingKernelClient
client = BlockingKernelClient(connection_file=sys.argv[1])
client.load_connection_file()
client.start_channels()
client.wait_for_ready(timeout=120)
print("kernel ready")
client.stop_channels()
PY
for _ in $(seq 150); do curl -sf -o /dev/null http://127.0.0.1:5173/ && break; sleep 0.4; done
work_started; stay
