#!/bin/bash
# expect: idle
# needs: postgres psql initdb
# proof: terminal.log 1 row
# why: an interactive psql in a terminal against a real local PostgreSQL, one query typed, then left at its prompt: a person who walked away
. "$TRUTH_TOOLS/lib.sh"
start_postgres
exec python3 "$TRUTH_TOOLS/pty_drive.py" --log "$TRUTH_DIR/terminal.log" --ready '=#' --started "$TRUTH_DIR/work_started" \
  --type-every 0.05 --keys "select 1;
" --type-for 1.47 -- psql -h "$TRUTH_DIR" -U dev -d postgres -X
