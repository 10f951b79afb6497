#!/bin/bash
# expect: busy
# needs: curl
# proof: curl.log ^downloaded [0-9]+
# why: real curl downloading an artifact from another host at 20 kB/s: the transfer is the job
. "$TRUTH_TOOLS/lib.sh"
work_started
curl -sS -o /dev/null -w 'downloaded %{size_download}\n' "http://$OUTSIDE:8000/stream?rate=20000&seconds=$TRUTH_WORK" > "$TRUTH_DIR/curl.log" 2>&1
work_done; stay
