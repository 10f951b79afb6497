#!/bin/bash
# expect: idle
# settle: hold+15
# side: outside
# stay: 30
# why: an ssh -N port forward into the box, used once and left open (the box's end is sshd, with a keep-alive every 5 s)
# debatable: the tunnel is lost if the box sleeps; nothing flows through it
. "$TRUTH_TOOLS/lib.sh"
# Forwarded to the box's own sshd (10.200.0.2:22, the address it listens on): its banner shows the tunnel works.
ssh_opts=${SSH_CMD% *}
${ssh_opts/-tt/-T} -N -o ServerAliveInterval=5 -L 18081:10.200.0.2:22 ${SSH_CMD##* } > "$TRUTH_DIR/ssh.log" 2>&1 &
exec python3 -c "
import os, socket, time
for _ in range(60):
    try:
        s = socket.create_connection(('127.0.0.1', 18081)); s.recv(64); break  # sshd's banner through it
    except OSError: time.sleep(0.5)
open(os.environ['TRUTH_DIR'] + '/work_started', 'a').close()
time.sleep(3600)"
