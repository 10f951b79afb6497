#!/bin/bash
# expect: busy
# why: a build script compiling files one by one: each cc1 lives well under a tick, most are never sampled
# needs: gcc
. "$TRUTH_TOOLS/lib.sh"
printf 'int main(void){return 0;}\n' > t.c
work_started; work_until
while working; do gcc -O0 -c t.c -o t.o; sleep 0.3; done
work_done; stay
