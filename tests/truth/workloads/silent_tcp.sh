#!/bin/bash
# expect: busy
# why: an open remote session that is silent for now (a psql or nc session to another host)
# debatable: nobody may be using it; but closing it by sleeping loses the session
. "$TRUTH_TOOLS/lib.sh"
work_started
python3 -c "
import os, socket, select
s = socket.create_connection((os.environ['OUTSIDE'], 7000)); select.select([s], [], [], float(os.environ['TRUTH_WORK']))"
work_done; stay
