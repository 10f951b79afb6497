#!/bin/bash
# expect: idle
# why: a file watcher on inotify with nothing changing: blocked in a read
. "$TRUTH_TOOLS/lib.sh"
mkdir -p src
work_started
exec python3 -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
libc.inotify_add_watch(fd, b'src', 0x00000FFF)
while True:
    os.read(fd, 4096)
"
