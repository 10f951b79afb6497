#!/bin/bash
# expect: busy
# remote: sshd
# needs: rsync ssh sshd
# packages: rsync openssh-client openssh-server (Debian)
# proof: rsync.log ^sent [0-9,]+ bytes
# why: `rsync -e ssh` pushing a file to a host whose disk is slow (its receiving rsync reads its input at 2 kB/s): the whole file leaves the box at once, then the job waits silently for the far side to finish
. "$TRUTH_TOOLS/lib.sh"
HELD="$(cd "$(dirname "$0")" && pwd)/tools"
head -c $((2000 * ${TRUTH_WORK%.*})) /dev/urandom > "$TRUTH_DIR/payload.bin"
mkdir -p "$TRUTH_DIR/remote"
work_started
rsync -a --stats -e "${SSH_REMOTE% *}" --rsync-path="python3 $HELD/trickle.py 2000 -- rsync" \
  "$TRUTH_DIR/payload.bin" "${SSH_REMOTE##* }:$TRUTH_DIR/remote/" > "$TRUTH_DIR/rsync.log" 2>&1 < /dev/null
work_done; stay
