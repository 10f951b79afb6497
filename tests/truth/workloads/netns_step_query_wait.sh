#!/bin/bash
# expect: busy
# needs: unshare ip python3
# proof: client.log ^answered: report ready$
# why: a script's step in a rootless container's own network (`unshare -rn`: a user and network namespace of its own, as rootless podman or a pod gives a build) asks a database-like server there for a report and waits in silence for the answer: a query in hand is the job, whatever network namespace it runs in
. "$TRUTH_TOOLS/lib.sh"
# The server holds the request in select() with a timeout (no timer sleep, no CPU): only the client's wait can say
# that work is under way. Both live in the namespace's own loopback, which the box's sock_diag does not answer for.
export SERVER='
import select, socket, sys
s = socket.create_server(("127.0.0.1", 5432))
print("ready", flush=True)
c, _ = s.accept()
f = c.makefile("rwb")
seconds = float(f.readline().split()[1])
select.select([], [], [], seconds)
f.write(b"report ready\n"); f.flush()
'
export CLIENT='
import socket, sys
c = socket.create_connection(("127.0.0.1", 5432)); f = c.makefile("rwb")
f.write(b"REPORT %s\n" % sys.argv[1].encode()); f.flush()
print("answered: " + f.readline().decode().strip(), flush=True)
'
work_started
unshare -rn bash -c '
ip link set lo up
python3 -c "$SERVER" > "$TRUTH_DIR/server.log" 2>&1 &
for _ in $(seq 100); do grep -q ready "$TRUTH_DIR/server.log" 2>/dev/null && break; sleep 0.1; done
python3 -c "$CLIENT" "$TRUTH_WORK" > "$TRUTH_DIR/client.log" 2>&1 < /dev/null
wait
'
work_done; stay
