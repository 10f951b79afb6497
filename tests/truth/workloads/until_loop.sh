#!/bin/bash
# expect: busy
# why: a user's `until test -f done; do sleep 5; done`, waiting for another job (itself in a select, not a timer)
. "$TRUTH_TOOLS/lib.sh"
python3 -c "import select,os; select.select([],[],[],float(os.environ['TRUTH_WORK'])); open('done','w')" &
work_started
until test -f done; do sleep 5; done
work_done; stay
