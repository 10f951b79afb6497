#!/bin/bash
# expect: busy
# proof: tools.log ^round 3$
# why: a setup script handing each step to a short-lived tool it does not wait for (each ~20 ms of CPU, reaped by init, never alive at a tick long enough to show): the box computes
. "$TRUTH_TOOLS/lib.sh"
work_started; work_until
n=0
while working; do
  n=$((n + 1)); echo "round $n" >> "$TRUTH_DIR/tools.log"
  for _ in $(seq 25); do
    ( awk 'BEGIN { for (i = 0; i < 700000; i++) s += i * i }' & )
    sleep 0.03
  done
done
work_done; stay
