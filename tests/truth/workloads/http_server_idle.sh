#!/bin/bash
# expect: idle
# settle: hold+15
# why: python3 -m http.server with no clients: a server waiting for requests is not work
. "$TRUTH_TOOLS/lib.sh"
work_started
exec python3 -m http.server 8080 --bind 0.0.0.0
