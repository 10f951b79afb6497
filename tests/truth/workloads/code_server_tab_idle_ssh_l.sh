#!/bin/bash
# expect: idle
# side: outside
# needs: code-server chromium curl
# stay: 300
# settle: 90 (the goal for a tab left open: its start-up after the tab loads, the extension host and its first requests, is the editor's own work and on a loaded machine ran 66 s)
# proof: tab.log loaded after
# why: VS Code's server (code-server) on the box and the developer's real browser tab (Chromium) open on a file through ssh -L, then left untouched for 5 minutes: the editor's own keep-alives every 5 s, its first-minute messages and its 5-minute extension check are nobody's work
. "$TRUTH_TOOLS/lib.sh"
${SSH_CMD% *} -L 18081:127.0.0.1:18080 ${SSH_CMD##* } "export $BOXENV; . $TRUTH_TOOLS/lib.sh; start_code_server" > "$TRUTH_DIR/ssh.log" 2>&1 &
for _ in $(seq 300); do curl -fsS -o /dev/null http://127.0.0.1:18081/healthz 2>/dev/null && break; sleep 0.2; done
# The tab is loaded (workbench, Explorer, the file's editor) when it touches work_started: the untouched time starts.
exec python3 "$TRUTH_TOOLS/chromium_tab.py" idle http://127.0.0.1:18081 "$TRUTH_DIR/proj" --file hello.txt \
  --seconds 3600 --ready-file "$TRUTH_DIR/work_started" > "$TRUTH_DIR/tab.log" 2>&1
