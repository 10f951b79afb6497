#!/bin/bash
# expect: busy
# remote: sshd
# needs: rsync ssh sshd
# packages: rsync openssh-client openssh-server (Debian)
# proof: rsync.log ^sent [0-9,]+ bytes
# why: `rsync --bwlimit=1 -e ssh` pushing a file to another host at 1 KiB/s (throttled so as not to saturate a shared link), for the whole work time: the transfer is the job
. "$TRUTH_TOOLS/lib.sh"
head -c $((1024 * ${TRUTH_WORK%.*})) /dev/urandom > "$TRUTH_DIR/payload.bin"
mkdir -p "$TRUTH_DIR/remote"
work_started
rsync -a --stats --bwlimit=1 -e "${SSH_REMOTE% *}" \
  "$TRUTH_DIR/payload.bin" "${SSH_REMOTE##* }:$TRUTH_DIR/remote/" > "$TRUTH_DIR/rsync.log" 2>&1 < /dev/null
work_done; stay
