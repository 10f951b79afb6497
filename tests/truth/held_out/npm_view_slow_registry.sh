#!/bin/bash
# expect: busy
# remote: sshd
# needs: npm node ssh sshd
# packages: nodejs npm (Debian; ./dev installs nodejs, whose NodeSource build carries npm) openssh-client openssh-server
# proof: npm.log ^1\.0\.0$
# why: `npm view truthpkg version` against a private registry on another host that answers only after the work time (a cold proxy registry fetching upstream): the request is outstanding, the developer waits
. "$TRUTH_TOOLS/lib.sh"
HELD="$(cd "$(dirname "$0")" && pwd)/tools"
$SSH_REMOTE "setsid python3 $HELD/slowhttp.py registry --port 8602 --seconds ${TRUTH_WORK%.*} --log $TRUTH_DIR/registry.log > /dev/null 2>&1 < /dev/null &" < /dev/null
for _ in $(seq 100); do grep -q ready "$TRUTH_DIR/registry.log" 2>/dev/null && break; sleep 0.2; done
export NO_UPDATE_NOTIFIER=1 npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
work_started
npm view truthpkg version --registry "http://$OUTSIDE:8602/" --cache "$TRUTH_DIR/npm-cache" --fetch-retries 0 \
  --fetch-timeout 300000 > "$TRUTH_DIR/npm.log" 2>&1 < /dev/null
work_done; stay
