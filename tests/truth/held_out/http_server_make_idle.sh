#!/bin/bash
# expect: idle
# needs: make python3 ss
# packages: make iproute2 (Debian)
# settle: hold+15
# proof: server.log ^Serving HTTP on
# why: `make serve` running `python3 -m http.server` for a docs folder, nobody requesting anything: a server waiting for requests is not work, though make waits on it as on a build step
. "$TRUTH_TOOLS/lib.sh"
# Unlike workloads/http_server_idle (the server exec'd, its parent init), the server here is a step a job waits on
# (make in wait()), as `make serve`, `npm run serve` and Procfile runners start one. Its readiness is read from the
# socket table (`ss`), so no request is ever made.
mkdir -p "$TRUTH_DIR/site" && echo '<h1>docs</h1>' > "$TRUTH_DIR/site/index.html"
printf 'serve:\n\tcd site && python3 -u -m http.server 8080 --bind 127.0.0.1\n' > "$TRUTH_DIR/Makefile"
( for _ in $(seq 100); do [ -n "$(ss -Hltn 'sport = :8080')" ] && break; sleep 0.2; done; touch "$TRUTH_DIR/work_started" ) &
make -s serve > "$TRUTH_DIR/server.log" 2>&1 < /dev/null
