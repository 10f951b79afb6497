#!/bin/bash
# expect: busy
# side: outside
# needs: jupyter-server
# stay: 30
# proof: browser.log reply execute_reply ok
# why: a notebook cell waiting (time.sleep) in a real ipykernel, the JupyterLab tab polling through ssh -L: the cell is work, the polls after it are not
. "$TRUTH_TOOLS/lib.sh"
${SSH_CMD% *} -L 18888:127.0.0.1:8888 ${SSH_CMD##* } "export $BOXENV; mkdir -p $TRUTH_DIR/nb && exec $JUPYTER" > "$TRUTH_DIR/ssh.log" 2>&1 &
exec python3 "$TRUTH_TOOLS/browser.py" jupyter --port 18888 --run "$TRUTH_WORK" > "$TRUTH_DIR/browser.log" 2>&1
