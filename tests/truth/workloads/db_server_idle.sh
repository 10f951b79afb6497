#!/bin/bash
# expect: idle
# settle: hold+15
# why: a database server with no clients (a threaded socket server with 1 s housekeeping standing in for one)
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 -c "
import socketserver, threading, time
class H(socketserver.BaseRequestHandler):
    def handle(self): self.request.recv(1)
srv = socketserver.ThreadingTCPServer(('0.0.0.0', 5433), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
while True:
    time.sleep(1.0)  # checkpoint / vacuum timer
"
