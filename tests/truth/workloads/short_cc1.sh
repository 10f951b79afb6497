#!/bin/bash
# expect: busy
# why: a build script compiling small files in rounds: each cc1 lives ~30 ms, most are never alive at a tick
# needs: gcc
. "$TRUTH_TOOLS/lib.sh"
for i in 1 2 3; do
  printf 'static int g[64];\nint f%d(int x){int s=0;for(int i=0;i<x;i++){s+=g[i%%64]*%d;g[i%%64]=s;}return s;}\n' $i $i > f$i.c
done
work_started; work_until
while working; do gcc -O2 -c f1.c f2.c f3.c; sleep 0.5; done
work_done; stay
