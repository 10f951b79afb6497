#!/bin/bash
# expect: idle
# why: a docker-style idle daemon (many threads in futex and epoll waits, a housekeeping thread ticking)
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 -c "
import selectors, socket, threading, time
def tick():
    while True: time.sleep(0.5)
ev = threading.Event()
for _ in range(8): threading.Thread(target=ev.wait, daemon=True).start()
threading.Thread(target=tick, daemon=True).start()
sel = selectors.DefaultSelector(); a, b = socket.socketpair(); sel.register(a, selectors.EVENT_READ)
while True: sel.select(30)
"
