#!/bin/bash
# expect: busy
# needs: sqlite3 python3
# packages: sqlite3 python3 (Debian)
# proof: insert.log ^inserted 2$
# why: a job's `sqlite3` insert waiting (busy_timeout 60 s) on a database another process holds an exclusive transaction on for the work time (a migration in another terminal): the job waits on the lock
. "$TRUTH_TOOLS/lib.sh"
sqlite3 "$TRUTH_DIR/app.db" "create table t(x); insert into t values (0);"
# The holder: BEGIN EXCLUSIVE, one write, then it waits (its own wait is no signal: paused until an alarm) and commits.
python3 -c "
import os, signal, sqlite3
db = sqlite3.connect(os.environ['TRUTH_DIR'] + '/app.db', isolation_level=None)
db.execute('BEGIN EXCLUSIVE'); db.execute('insert into t values (1)')
open(os.environ['TRUTH_DIR'] + '/locked', 'w').close()
signal.signal(signal.SIGALRM, lambda *_: None); signal.alarm(int(float(os.environ['TRUTH_WORK']))); signal.pause()
db.execute('COMMIT')" > "$TRUTH_DIR/holder.log" 2>&1 < /dev/null &
for _ in $(seq 100); do [ -e "$TRUTH_DIR/locked" ] && break; sleep 0.1; done
work_started
sqlite3 -cmd ".timeout 60000" "$TRUTH_DIR/app.db" "insert into t values (2); select 'inserted ' || max(x) from t;" \
  > "$TRUTH_DIR/insert.log" 2>&1 < /dev/null
work_done; stay
