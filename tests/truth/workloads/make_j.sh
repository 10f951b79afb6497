#!/bin/bash
# expect: busy
# why: make -j2 over a small C project, rebuilt again and again: compiling is the work a developer waits for
# needs: gcc make
. "$TRUTH_TOOLS/lib.sh"
for i in $(seq 1 40); do printf 'int f%d(int x){int s=0;for(int i=0;i<x;i++)s+=i*%d;return s;}\n' $i $i > f$i.c; done
printf 'OBJ=$(patsubst %%.c,%%.o,$(wildcard *.c))\nall: $(OBJ)\n%%.o: %%.c\n\tgcc -O2 -c $< -o $@\nclean:\n\trm -f *.o\n' > Makefile
work_started; work_until
while working; do make -s -j2 clean all >/dev/null; done
work_done; stay
