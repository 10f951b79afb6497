#!/bin/bash
# expect: idle
# why: an open remote session with nothing in flight (a psql or nc session to another host): a person who walked away
# debatable: the session is lost if the box sleeps; but nothing is outstanding on it, and a job would be waiting
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 -c "
import os, socket, select
s = socket.create_connection((os.environ['OUTSIDE'], 7000)); select.select([s], [], [])"
