#!/bin/bash
# expect: idle
# needs: postgres psql initdb
# packages: postgresql python3-psycopg2 (Debian; or `pip install psycopg2-binary`)
# stay: 30
# settle: hold+15
# proof: listen.log ^listening on deploys
# why: a notification listener (psycopg2, `LISTEN deploys;`, then the library's documented select() loop with a 5 s timeout) on a real local PostgreSQL, started by a script that waits on it; no NOTIFY ever comes: a subscriber between events
. "$TRUTH_TOOLS/lib.sh"
# psql itself cannot wait for notifications (it shows them only after its next command), so the listener is the
# client library's own way: psycopg2's docs, "Asynchronous notifications".
start_postgres
cat > "$TRUTH_DIR/listen.py" <<'PY'
import os, select, sys
import psycopg2
conn = psycopg2.connect(host=os.environ["TRUTH_DIR"], user="dev", dbname="postgres")
conn.set_isolation_level(psycopg2.extensions.ISOLATION_LEVEL_AUTOCOMMIT)
conn.cursor().execute("LISTEN deploys;")
print("listening on deploys", flush=True)
open(os.path.join(os.environ["TRUTH_DIR"], "work_started"), "a").close()
while True:
    if select.select([conn], [], [], 5) == ([], [], []):
        print("Timeout", flush=True)
    else:
        conn.poll()
        while conn.notifies:
            n = conn.notifies.pop(0)
            print("Got NOTIFY:", n.pid, n.channel, n.payload, flush=True)
PY
python3 "$TRUTH_DIR/listen.py" > "$TRUTH_DIR/listen.log" 2>&1 < /dev/null
