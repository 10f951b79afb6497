#!/bin/bash
# expect: busy
# needs: pg_ctl postgres psql initdb
# packages: postgresql (Debian)
# proof: postgres.log duration: \d+\.\d+ ms +statement: select pg_sleep
# why: a job's `psql -c 'select pg_sleep(N)'` over the Unix socket of a PostgreSQL started earlier with `pg_ctl start` (daemonized, reparented to init, nobody's child of the job): the job waits on the database
. "$TRUTH_TOOLS/lib.sh"
# Unlike workloads/pg_sleep_unix (postgres a background child of the job's own shell), the server here is started
# as developers and init scripts do: pg_ctl forks it off and exits, so the postmaster's parent is PID 1.
initdb -D "$TRUTH_DIR/pg" -U dev --auth=trust >/dev/null
pg_ctl -D "$TRUTH_DIR/pg" -l "$TRUTH_DIR/postgres.log" -w -s \
  -o "-k $TRUTH_DIR -c listen_addresses= -c log_min_duration_statement=0 -c shared_buffers=16MB -c max_connections=20" start
start_daemon
work_started
psql -h "$TRUTH_DIR" -U dev -d postgres -X -q -c "select pg_sleep($TRUTH_WORK)" > "$TRUTH_DIR/psql.log" 2>&1
work_done; stay
