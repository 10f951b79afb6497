#!/bin/bash
# expect: busy
# remote: sshd
# needs: git ssh sshd
# packages: git openssh-client openssh-server (Debian)
# proof: push.log remote: checks passed
# why: `git push` over real OpenSSH to a bare repository whose pre-receive hook runs the server's checks for the work time (one line at once, then silence): the developer waits for the push
. "$TRUTH_TOOLS/lib.sh"
export GIT_SSH_COMMAND="${SSH_REMOTE% *}" REMOTE="${SSH_REMOTE##* }"
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
git init -q --bare "$TRUTH_DIR/origin.git"
printf '#!/bin/sh\necho "checks: running"\nsleep %s\necho "checks passed"\n' "${TRUTH_WORK%.*}" > "$TRUTH_DIR/origin.git/hooks/pre-receive"
chmod +x "$TRUTH_DIR/origin.git/hooks/pre-receive"
git init -q -b main "$TRUTH_DIR/work" && cd "$TRUTH_DIR/work"
for i in 1 2 3; do seq $i 500 > "f$i"; git add -A; git commit -qm "change $i"; done
git remote add origin "$REMOTE:$TRUTH_DIR/origin.git"
work_started
git push origin main > "$TRUTH_DIR/push.log" 2>&1 < /dev/null
work_done; stay
