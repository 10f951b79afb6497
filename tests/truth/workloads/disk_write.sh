#!/bin/bash
# expect: busy
# why: writing a large file with direct I/O (an image, a dataset): disk-bound work
. "$TRUTH_TOOLS/lib.sh"
work_started; work_until
while working; do dd if=/dev/zero of=big.img bs=1M count=64 oflag=direct conv=fsync status=none; done
rm -f big.img
work_done; stay
