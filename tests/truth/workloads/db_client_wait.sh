#!/bin/bash
# expect: busy
# why: a database client mid-query on a remote server (a socket server standing in for the database): silent, waiting
. "$TRUTH_TOOLS/lib.sh"
work_started
python3 -c "
import os, socket
s = socket.create_connection((os.environ['OUTSIDE'], 5432)); f = s.makefile('rwb')
f.write(b'SLEEP %s\n' % os.environ['TRUTH_WORK'].encode()); f.flush(); f.readline()"
work_done; stay
