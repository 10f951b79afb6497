#!/bin/bash
# expect: idle
# remote: sshd
# needs: autossh ssh sshd
# packages: autossh openssh-client openssh-server (Debian)
# stay: 30
# settle: hold+15
# proof: tunnel.log LISTEN
# why: a reverse tunnel kept up by autossh (`autossh -M 0 -N -R 18080:... -o ServerAliveInterval=2`), exposing a box port on another host, nothing ever forwarded through it: only keep-alives every 2 s, a tunnel waiting for use is not work
. "$TRUTH_TOOLS/lib.sh"
# Unlike workloads/ssh_tunnel_idle_box (ssh -N -L from the box, no keep-alive, used once) and ssh_forward_idle (a tunnel
# into the box from outside): a remote forward, never used, with the client's own keep-alives, under a supervisor
# (autossh waits on its ssh; the script waits on autossh, as a tunnel.sh started at login does).
export AUTOSSH_GATETIME=0 AUTOSSH_LOGFILE="$TRUTH_DIR/autossh.log"
opts=${SSH_REMOTE% *} target=${SSH_REMOTE##* }
autossh -M 0 -N -o ServerAliveInterval=2 -o ServerAliveCountMax=3 -o ExitOnForwardFailure=yes \
  ${opts#ssh } -R 18080:127.0.0.1:8080 "$target" < /dev/null > "$TRUTH_DIR/ssh.log" 2>&1 &
for _ in $(seq 50); do
  $SSH_REMOTE "ss -Hltn 'sport = :18080'" < /dev/null > "$TRUTH_DIR/tunnel.log" 2>&1
  grep -q LISTEN "$TRUTH_DIR/tunnel.log" && break; sleep 0.5
done
work_started
wait
