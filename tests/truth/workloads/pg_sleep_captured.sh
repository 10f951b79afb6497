#!/bin/bash
# expect: busy
# needs: postgres psql initdb
# proof: result.log ^slept:
# why: a script capturing a long query's answer from a real local PostgreSQL (`$(psql -c ...)`): the shell reads psql's output, psql waits on the database
. "$TRUTH_TOOLS/lib.sh"
start_postgres
work_started
answer=$($PSQL -t -A -c "select 'slept: ' || pg_sleep($TRUTH_WORK)::text")
echo "slept: ${answer}" > "$TRUTH_DIR/result.log"
work_done; stay
