#!/bin/bash
# expect: idle
# settle: hold+15
# stay: 45
# why: a streaming client whose server sends only a keep-alive line every 15 s (an SSE comment, a bookmark)
. "$TRUTH_TOOLS/lib.sh"
exec $NET watch --keepalive 15
