#!/bin/bash
# expect: idle
# side: outside
# needs: jupyter-server
# stay: 40
# settle: hold+15
# proof: browser.log reply kernel_info_reply ok
# why: a real notebook server and kernel on the box, the developer's JupyterLab tab on it through ssh -L (polls every 10 s, kernel websocket open), no cell running
. "$TRUTH_TOOLS/lib.sh"
${SSH_CMD% *} -L 18888:127.0.0.1:8888 ${SSH_CMD##* } "export $BOXENV; mkdir -p $TRUTH_DIR/nb && exec $JUPYTER" > "$TRUTH_DIR/ssh.log" 2>&1 &
exec python3 "$TRUTH_TOOLS/browser.py" jupyter --port 18888 > "$TRUTH_DIR/browser.log" 2>&1
