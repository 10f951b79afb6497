#!/bin/bash
# expect: busy
# needs: unshare ip initdb postgres psql pg_isready
# packages: postgresql iproute2 util-linux (Debian)
# proof: postgres.log duration: \d+\.\d+ ms +statement: select pg_sleep
# why: a PostgreSQL in a rootless container's own network (`unshare -rn`, its user mapped back to an unprivileged uid inside, as rootless podman runs a database image as its postgres user) and a job there running `psql -h 127.0.0.1 -c 'select pg_sleep(N)'` over TCP: the job waits on its query, whatever network namespace it and the database share
. "$TRUTH_TOOLS/lib.sh"
# Written before the next rule (round 2 of the held-out set, RESULTS_BEFORE.md). postgres refuses to run as root, and
# `unshare -r` makes the user root: a second user namespace maps it back to uid 1000, as a container image's user.
export PGDIR="$TRUTH_DIR/pg"
unshare -rn bash -c '
ip link set lo up
exec unshare --map-user=1000 --map-group=1000 bash -c "
. \"\$TRUTH_TOOLS/lib.sh\"
initdb -D \"\$PGDIR\" -U dev --auth=trust > /dev/null
postgres -D \"\$PGDIR\" -k \"\$TRUTH_DIR\" -c listen_addresses=127.0.0.1 -c log_min_duration_statement=0 \
  -c logging_collector=off -c shared_buffers=16MB -c max_connections=20 > \"\$TRUTH_DIR/postgres.log\" 2>&1 &
for _ in \$(seq 100); do pg_isready -q -h 127.0.0.1 -U dev && break; sleep 0.2; done
work_started
psql -h 127.0.0.1 -U dev -d postgres -X -q -c \"select pg_sleep(\$TRUTH_WORK)\" > \"\$TRUTH_DIR/psql.log\" 2>&1 < /dev/null
work_done
stay
"'
