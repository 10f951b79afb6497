#!/bin/bash
# expect: busy
# remote: sshd
# needs: ssh sshd initdb postgres psql pg_isready
# packages: openssh-client openssh-server postgresql (Debian)
# proof: rpostgres.log duration: \d+\.\d+ ms +statement: select pg_sleep
# why: a job's `psql -h 127.0.0.1 -p 15432 -c 'select pg_sleep(N)'` to a database on another host through the developer's own tunnel (`ssh -N -L 15432:<its socket> bastion`, opened earlier, forked off): the query's peer on the box is the box's own ssh client, and the job waits on the query all the same
. "$TRUTH_TOOLS/lib.sh"
# Written before the next rule (round 2 of the held-out set, RESULTS_BEFORE.md). The remote PostgreSQL runs in the
# outside world (started over $SSH_REMOTE, so it is no process of the box), on a Unix socket the tunnel forwards to.
opts=${SSH_REMOTE% *} target=${SSH_REMOTE##* }
mkdir -p "$TRUTH_DIR/rsock"
$opts "$target" "PATH=$PATH; initdb -D $TRUTH_DIR/rpg -U dev --auth=trust > /dev/null && \
  (setsid postgres -D $TRUTH_DIR/rpg -k $TRUTH_DIR/rsock -c listen_addresses= -c log_min_duration_statement=0 \
   -c logging_collector=off -c shared_buffers=16MB -c max_connections=20 > $TRUTH_DIR/rpostgres.log 2>&1 < /dev/null &) && \
  for _ in \$(seq 100); do pg_isready -q -h $TRUTH_DIR/rsock -U dev && exit 0; sleep 0.2; done; exit 1" \
  > "$TRUTH_DIR/remote.log" 2>&1 < /dev/null
$opts -f -N -L "15432:$TRUTH_DIR/rsock/.s.PGSQL.5432" "$target" < /dev/null
for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p 15432 -U dev && break; sleep 0.2; done
start_daemon
work_started
psql -h 127.0.0.1 -p 15432 -U dev -d postgres -X -q -c "select pg_sleep($TRUTH_WORK)" > "$TRUTH_DIR/psql.log" 2>&1 < /dev/null
work_done; stay
