#!/bin/bash
# expect: busy
# remote: sshd
# needs: pip3 ssh sshd
# packages: python3-pip openssh-client openssh-server (Debian)
# proof: pip.log ^Saved .*truthpkg-1\.0-py3-none-any\.whl
# why: `pip download` of a package from a slow private index on another host (its wheel arrives at ~1 kB/s, 500 bytes every 0.5 s, for the work time): the installer waits on the mirror
. "$TRUTH_TOOLS/lib.sh"
HELD="$(cd "$(dirname "$0")" && pwd)/tools"
# The index runs in the outside world (started there over ssh), not in the box.
$SSH_REMOTE "setsid python3 $HELD/slowhttp.py index --port 8601 --seconds ${TRUTH_WORK%.*} --rate 1000 --log $TRUTH_DIR/index.log > /dev/null 2>&1 < /dev/null &" < /dev/null
for _ in $(seq 100); do grep -q ready "$TRUTH_DIR/index.log" 2>/dev/null && break; sleep 0.2; done
work_started
PIP_CONFIG_FILE=/dev/null python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check --no-input \
  --progress-bar off --trusted-host "$OUTSIDE" --index-url "http://$OUTSIDE:8601/simple/" -d "$TRUTH_DIR/dl" truthpkg > "$TRUTH_DIR/pip.log" 2>&1 < /dev/null
work_done; stay
