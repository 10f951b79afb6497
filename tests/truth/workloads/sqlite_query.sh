#!/bin/bash
# expect: busy
# why: a local database query that takes a while (sqlite3 computing over a recursive CTE)
# needs: sqlite3
. "$TRUTH_TOOLS/lib.sh"
work_started; work_until
while working; do
  sqlite3 db.sqlite "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 2000000) SELECT sum(x) FROM c;" >/dev/null
done
work_done; stay
