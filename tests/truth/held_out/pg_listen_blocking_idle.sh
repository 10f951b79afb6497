#!/bin/bash
# expect: idle
# needs: postgres psql initdb
# packages: postgresql python3-psycopg2 (Debian; or `pip install psycopg2-binary`)
# stay: 30
# settle: hold+15
# proof: listen.log ^listening on deploys
# why: the same LISTEN client written without a timeout (`select([conn], [], [])`, as many small listeners are), started by a script that waits on it; no NOTIFY ever comes: a subscriber between events, whose only exchange (LISTEN) was answered at once
. "$TRUTH_TOOLS/lib.sh"
# The sibling of pg_listen_idle (5 s select timeouts, the psycopg2 docs' loop): here one block, never woken.
start_postgres
cat > "$TRUTH_DIR/listen.py" <<'PY'
import os, select
import psycopg2
conn = psycopg2.connect(host=os.environ["TRUTH_DIR"], user="dev", dbname="postgres")
conn.set_isolation_level(psycopg2.extensions.ISOLATION_LEVEL_AUTOCOMMIT)
conn.cursor().execute("LISTEN deploys;")
print("listening on deploys", flush=True)
open(os.path.join(os.environ["TRUTH_DIR"], "work_started"), "a").close()
while True:
    select.select([conn], [], [])
    conn.poll()
    while conn.notifies:
        n = conn.notifies.pop(0)
        print("Got NOTIFY:", n.pid, n.channel, n.payload, flush=True)
PY
python3 "$TRUTH_DIR/listen.py" > "$TRUTH_DIR/listen.log" 2>&1 < /dev/null
