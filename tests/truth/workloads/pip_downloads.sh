#!/bin/bash
# expect: busy
# why: an installer fetching many small packages one after another, a new connection each, short gaps between
. "$TRUTH_TOOLS/lib.sh"
work_started; work_until
while working; do
  python3 -c "import urllib.request,sys; urllib.request.urlopen('http://$OUTSIDE:8000/stream?rate=30000&seconds=2').read()"
  sleep 0.5
done
work_done; stay
