#!/bin/bash
# expect: busy
# remote: sshd
# needs: ssh sshd
# packages: openssh-client openssh-server (Debian)
# proof: deploy.log ^deploy: started
# why: `ssh host 'deploy'` over a shared connection (ControlMaster, as many ~/.ssh/config have it): the remote command prints one line at once, then nothing for the work time; the job's ssh is a mux client whose only socket is the master's Unix socket, the TCP connection held by a daemonized master
. "$TRUTH_TOOLS/lib.sh"
# Adapted: the plain `ssh host cmd` that prints a line then goes silent is workloads/ssh_remote_silent already; this
# is the same command through a ControlMaster started before the job (`ssh -fNM`: forked off, reparented to init).
opts=${SSH_REMOTE% *} target=${SSH_REMOTE##* }
$opts -o ControlMaster=yes -o ControlPath="$TRUTH_DIR/cm.sock" -o ControlPersist=yes -f -N "$target" < /dev/null
$opts -o ControlPath="$TRUTH_DIR/cm.sock" -O check "$target" > "$TRUTH_DIR/master.log" 2>&1
start_daemon
work_started
$opts -o ControlPath="$TRUTH_DIR/cm.sock" "$target" "echo deploy: started; sleep $TRUTH_WORK; echo deploy: done" \
  > "$TRUTH_DIR/deploy.log" 2>&1 < /dev/null
work_done; stay
