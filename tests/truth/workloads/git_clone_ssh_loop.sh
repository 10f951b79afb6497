#!/bin/bash
# expect: busy
# remote: sshd
# needs: git ssh sshd
# proof: clone.log ^cloned 2$
# why: real git cloning a repository from another host over real OpenSSH, again and again (a CI step fetching sources)
. "$TRUTH_TOOLS/lib.sh"
export GIT_SSH_COMMAND="${SSH_REMOTE% *}" REMOTE="${SSH_REMOTE##* }"
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
$SSH_REMOTE "rm -rf $TRUTH_DIR/origin && git init -q $TRUTH_DIR/origin && cd $TRUTH_DIR/origin && for i in \$(seq 30); do seq \$i 3000 > f\$((i % 5)); git add -A; git -c user.name=o -c user.email=o@x commit -qm c\$i; done" < /dev/null
work_started; work_until
n=0
while working; do
  rm -rf "$TRUTH_DIR/clone"
  git clone -q "$REMOTE:$TRUTH_DIR/origin" "$TRUTH_DIR/clone" < /dev/null && n=$((n + 1)) && echo "cloned $n" >> "$TRUTH_DIR/clone.log"
done
work_done; stay
