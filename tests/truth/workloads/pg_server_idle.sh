#!/bin/bash
# expect: idle
# needs: postgres psql initdb
# settle: hold+15
# proof: postgres.log database system is ready to accept connections
# why: a real PostgreSQL left running with no clients (checkpointer, autovacuum launcher, WAL writer): a database waiting is not work
. "$TRUTH_TOOLS/lib.sh"
start_postgres
$PSQL -c "create table t (x int)"
work_started; stay
