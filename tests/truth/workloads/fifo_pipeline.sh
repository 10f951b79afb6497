#!/bin/bash
# expect: busy
# why: a pipeline stage blocked opening a FIFO while its partner is still busy elsewhere (here: in a long select)
# debatable: a daemon that waits on a FIFO for ever would count too (a known limit)
. "$TRUTH_TOOLS/lib.sh"
mkfifo results.fifo
python3 -c "
import os, select
select.select([], [], [], float(os.environ['TRUTH_WORK']))
with open('results.fifo', 'w') as f: f.write('done\n')" &
work_started
cat results.fifo > results.txt
work_done; stay
