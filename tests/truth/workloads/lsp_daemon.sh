#!/bin/bash
# expect: idle
# why: a language-server-like daemon written with a time.sleep(1) loop and worker threads, nothing to do
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 -c "
import json, threading, time
def worker(ev): ev.wait()
ev = threading.Event()
for _ in range(4): threading.Thread(target=worker, args=(ev,), daemon=True).start()
while True:
    json.loads(json.dumps({'diagnostics': list(range(50))}))
    time.sleep(1)
"
