#!/bin/bash
# expect: busy
# needs: postgres psql initdb
# proof: postgres.log duration: \d+\.\d+ ms +statement: select pg_sleep
# why: a job's `psql -c 'select pg_sleep(N)'` against a real local PostgreSQL over its Unix socket: waiting on the database is work
. "$TRUTH_TOOLS/lib.sh"
start_postgres
start_daemon
work_started
$PSQL -c "select pg_sleep($TRUTH_WORK)"
work_done; stay
