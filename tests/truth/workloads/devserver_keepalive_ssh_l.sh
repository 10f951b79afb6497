#!/bin/bash
# expect: idle
# settle: hold+15
# side: outside
# stay: 30
# why: a dev server on the box with the developer's browser tab open through ssh -L: one page load, then an idle keep-alive
. "$TRUTH_TOOLS/lib.sh"
${SSH_CMD% *} -L 18080:127.0.0.1:8080 ${SSH_CMD##* } "python3 $TRUTH_TOOLS/netplay.py dev-server --port 8080" > "$TRUTH_DIR/ssh.log" 2>&1 &
exec python3 "$TRUTH_TOOLS/netplay.py" browser --port 18080
