#!/bin/bash
# expect: busy
# needs: tmux postgres psql initdb
# packages: tmux postgresql (Debian)
# proof: postgres.log duration: \d+\.\d+ ms +statement: select pg_sleep
# why: a long query (`psql -c 'select pg_sleep(N)'` on a real local PostgreSQL) started in a detached tmux session so it survives the terminal (`tmux new -d`): the query is work though nobody watches the pane
. "$TRUTH_TOOLS/lib.sh"
start_postgres
work_started
tmux -S "$TRUTH_DIR/tm" new-session -d -x 120 -y 40 \
  "$PSQL -c 'select pg_sleep($TRUTH_WORK)' > $TRUTH_DIR/psql.log 2>&1; touch $TRUTH_DIR/work_done"
stay
