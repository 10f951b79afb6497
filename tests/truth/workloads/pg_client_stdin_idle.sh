#!/bin/bash
# expect: idle
# needs: postgres psql initdb
# proof: psql.log ^ *1$
# why: psql fed by a pipe whose writer has nothing more to say, its connection to a real local PostgreSQL idle: it waits on its input, not the database
. "$TRUTH_TOOLS/lib.sh"
start_postgres
work_started
{ echo "select 1;"; exec python3 -c 'import signal; signal.pause()'; } | $PSQL -t -A > "$TRUTH_DIR/psql.log" 2>&1
