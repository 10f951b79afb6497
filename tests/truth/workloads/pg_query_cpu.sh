#!/bin/bash
# expect: busy
# needs: postgres psql initdb
# proof: postgres.log duration: .*statement: select count
# why: a real PostgreSQL computing a long query for a job's psql over its Unix socket: the server's CPU is the job's work
. "$TRUTH_TOOLS/lib.sh"
start_postgres
work_started; work_until
while working; do
  $PSQL -c "select count(*) from generate_series(1, 3000000) g where g % 7 = 3" > /dev/null
done
work_done; stay
