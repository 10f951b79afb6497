#!/bin/bash
# expect: idle
# remote: sshd
# needs: ssh sshd
# stay: 30
# settle: hold+15
# proof: tunnel.log ^SSH-2.0-
# why: a tunnel the developer opened from the box (real ssh -N -L to another host), used once and left open: nothing flows through it
. "$TRUTH_TOOLS/lib.sh"
${SSH_REMOTE% *} -N -L 12222:10.200.0.1:22 ${SSH_REMOTE##* } < /dev/null > "$TRUTH_DIR/ssh.log" 2>&1 &
python3 -c "
import socket, time
for _ in range(100):
    try:
        s = socket.create_connection(('127.0.0.1', 12222)); print(s.recv(64).decode().strip(), flush=True); break
    except OSError: time.sleep(0.3)" > "$TRUTH_DIR/tunnel.log" 2>&1
work_started; stay
