#!/bin/bash
# expect: busy
# needs: git
# proof: git.log ^size-pack:
# why: real git packing a repository of many objects again and again (git gc --aggressive on a big history): compute
. "$TRUTH_TOOLS/lib.sh"
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
git init -q "$TRUTH_DIR/repo" && cd "$TRUTH_DIR/repo"
for i in $(seq 40); do seq "$i" 4000 | sed "s/^/line $i /" > "f$((i % 7)).txt"; git add -A; git commit -qm "c$i"; done
work_started; work_until
while working; do git repack -adfq --window=250 --depth=50; done
git count-objects -v > "$TRUTH_DIR/git.log"
work_done; stay
