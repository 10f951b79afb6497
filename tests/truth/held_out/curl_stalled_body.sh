#!/bin/bash
# expect: busy
# remote: sshd
# needs: curl ssh sshd
# packages: curl openssh-client openssh-server (Debian)
# proof: curl.log ^got 200 12$
# why: real curl fetching a report from another host whose server sends the status line and headers at once, then the body only when the report is ready (the work time): a request asked and not yet answered
. "$TRUTH_TOOLS/lib.sh"
HELD="$(cd "$(dirname "$0")" && pwd)/tools"
$SSH_REMOTE "setsid python3 $HELD/slowhttp.py stall --port 8600 --seconds ${TRUTH_WORK%.*} --log $TRUTH_DIR/server.log > /dev/null 2>&1 < /dev/null &" < /dev/null
for _ in $(seq 100); do grep -q ready "$TRUTH_DIR/server.log" 2>/dev/null && break; sleep 0.2; done
start_daemon
work_started
curl -sS -o "$TRUTH_DIR/report.txt" -w 'got %{http_code} %{size_download}\n' "http://$OUTSIDE:8600/report" > "$TRUTH_DIR/curl.log" 2>&1 < /dev/null
work_done; stay
