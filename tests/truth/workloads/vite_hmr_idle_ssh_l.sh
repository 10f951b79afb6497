#!/bin/bash
# expect: idle
# side: outside
# needs: vite
# stay: 70
# settle: hold+15
# proof: browser.log hmr b'\{"type":"connected"\}'
# why: a real vite dev server on the box, the developer's page open through ssh -L with its hot-reload websocket pinging every 30 s (never answered), nothing edited
. "$TRUTH_TOOLS/lib.sh"
${SSH_CMD% *} -L 15173:127.0.0.1:5173 ${SSH_CMD##* } "export $BOXENV; . $TRUTH_TOOLS/lib.sh; make_vite_project && cd $TRUTH_DIR/web && exec vite" > "$TRUTH_DIR/ssh.log" 2>&1 &
exec python3 "$TRUTH_TOOLS/browser.py" vite --port 15173 > "$TRUTH_DIR/browser.log" 2>&1
