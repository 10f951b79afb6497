#!/bin/bash
# expect: idle
# settle: hold+15
# side: outside
# stay: 60
# why: an editor's server on the box with its tab open through ssh -L and left untouched: the server pushes its own chatter in bursts (3 KB/s for 6 s every 20 s: presence, telemetry), nothing asked; the bytes on the box's link are the forwarded connection's, judged there, and nobody is working
. "$TRUTH_TOOLS/lib.sh"
${SSH_CMD% *} -L 18082:127.0.0.1:8082 ${SSH_CMD##* } "python3 $TRUTH_TOOLS/netplay.py chatter-server --port 8082 --rate 3000 --burst 6 --every 20" > "$TRUTH_DIR/ssh.log" 2>&1 &
exec python3 "$TRUTH_TOOLS/netplay.py" chatter-client --port 18082
