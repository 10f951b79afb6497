#!/bin/bash
# expect: idle
# why: `sleep infinity` keeping a container or session alive: no job step ever follows it
. "$TRUTH_TOOLS/lib.sh"
work_started
exec sleep infinity
