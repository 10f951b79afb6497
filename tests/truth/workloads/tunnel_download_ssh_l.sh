#!/bin/bash
# expect: busy
# side: outside
# needs: curl
# proof: curl.log ^got 200
# why: the developer downloads a build artifact from a server on the box through ssh -L at a slow link's pace (8 KB/s): the download is work, however its bytes are counted (on the box's link, or on the forwarded connection they end on)
. "$TRUTH_TOOLS/lib.sh"
${SSH_CMD% *} -L 18081:127.0.0.1:8081 ${SSH_CMD##* } "python3 $TRUTH_TOOLS/netplay.py slow-server --port 8081 --rate 8000 --seconds ${TRUTH_WORK%.*}" > "$TRUTH_DIR/ssh.log" 2>&1 &
work_started
curl -sS --retry 30 --retry-delay 1 --retry-all-errors -o "$TRUTH_DIR/artifact.bin" -w 'got %{http_code} %{size_download}\n' http://127.0.0.1:18081/artifact > "$TRUTH_DIR/curl.log" 2>&1 < /dev/null
work_done; stay
