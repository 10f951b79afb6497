# Sourced by every workload. $TRUTH_DIR: its private directory (cwd); $TRUTH_WORK: seconds of work;
# $TRUTH_TOOLS: helpers; $OUTSIDE: the outside world's address (across eth0).
set -u
for _d in /usr/lib/postgresql/*/bin; do [ -d "$_d" ] && PATH="$PATH:$_d"; done  # Debian keeps postgres there
work_started() { touch "$TRUTH_DIR/work_started"; }
work_done() { touch "$TRUTH_DIR/work_done"; }
work_until() { END=$(( $(date +%s) + ${TRUTH_WORK%.*} )); }
working() { [ "$(date +%s)" -lt "$END" ]; }
# Leave the workload's processes as they are until the harness ends the namespace.
stay() { exec python3 -c 'import signal; signal.pause()'; }
# The connection stand-ins (tools/netplay.py): `$NET NAME [options]`.
NET="python3 $TRUTH_TOOLS/netplay.py"
# An unrelated daemon sleeping between checks, as most boxes have one: started first, and given time for its
# first sleep (which counts once) to end, so a workload's own verdict is what is judged after.
start_daemon() {
  python3 -c 'import time
while True: time.sleep(4)' &
  sleep 6
}
# A PostgreSQL server of the workload's own, as the test user: its socket in $TRUTH_DIR, no TCP, every statement
# logged with its duration (the proof a query really ran). Returns once it accepts connections.
start_postgres() {
  initdb -D "$TRUTH_DIR/pg" -U dev --auth=trust >/dev/null
  postgres -D "$TRUTH_DIR/pg" -k "$TRUTH_DIR" -c listen_addresses= -c log_min_duration_statement=0 \
    -c logging_collector=off -c shared_buffers=16MB -c max_connections=20 >"$TRUTH_DIR/postgres.log" 2>&1 &
  for _ in $(seq 100); do pg_isready -q -h "$TRUTH_DIR" -U dev && return 0; sleep 0.2; done
  return 1
}
PSQL="psql -h $TRUTH_DIR -U dev -d postgres -X -q"
# What a command run on the box over ssh needs to find the harness's tools (an ssh session's PATH is the system's).
BOXENV="PATH=$PATH TRUTH_DIR=$TRUTH_DIR TRUTH_TOOLS=$TRUTH_TOOLS"
# A notebook server (jupyter_server, with ipykernel's kernel), token "truth", in $TRUTH_DIR/nb; log nb.log.
JUPYTER="jupyter-server --ServerApp.ip=127.0.0.1 --ServerApp.port=8888 --ServerApp.port_retries=0 --ServerApp.open_browser=False --IdentityProvider.token=truth --ServerApp.root_dir=$TRUTH_DIR/nb"
# A vite project (index.html and one module) in $TRUTH_DIR/web, on the harness's cached node_modules.
make_vite_project() {
  mkdir -p "$TRUTH_DIR/web"
  ln -sfn "$(dirname "$(dirname "$(command -v vite)")")" "$TRUTH_DIR/web/node_modules"
  printf '<!doctype html><html><body><div id="app"></div><script type="module" src="/main.js"></script></body></html>\n' > "$TRUTH_DIR/web/index.html"
  printf 'document.querySelector("#app").textContent = "hello";\nif (import.meta.hot) import.meta.hot.accept();\n' > "$TRUTH_DIR/web/main.js"
  printf 'export default { cacheDir: "%s/web/.vite", server: { host: "127.0.0.1", port: 5173, strictPort: true } };\n' "$TRUTH_DIR" > "$TRUTH_DIR/web/vite.config.mjs"
}
# A Redis server of the workload's own on a Unix socket ($TRUTH_DIR/redis.sock, no TCP), log redis.log.
REDIS="redis-cli -s $TRUTH_DIR/redis.sock"
start_redis() {
  redis-server --port 0 --unixsocket "$TRUTH_DIR/redis.sock" --unixsocketperm 700 --dir "$TRUTH_DIR" --save "" \
    --appendonly no --enable-debug-command yes --logfile "$TRUTH_DIR/redis.log" --daemonize no &
  for _ in $(seq 100); do [ "$($REDIS ping 2>/dev/null)" = PONG ] && return 0; sleep 0.1; done
  return 1
}
# VS Code's server (code-server, from the harness's cache) on 127.0.0.1:18080 with no password, on the folder
# $TRUTH_DIR/proj (one file), everything of its own under $TRUTH_DIR/cs; it replaces the calling shell.
start_code_server() {
  mkdir -p "$TRUTH_DIR/cs/data/User" "$TRUTH_DIR/cs/ext" "$TRUTH_DIR/cs/config" "$TRUTH_DIR/cs/share" "$TRUTH_DIR/proj"
  printf 'hello from the box\n' > "$TRUTH_DIR/proj/hello.txt"
  printf '{ "files.autoSave": "off" }\n' > "$TRUTH_DIR/cs/data/User/settings.json"
  XDG_CONFIG_HOME="$TRUTH_DIR/cs/config" XDG_DATA_HOME="$TRUTH_DIR/cs/share" exec code-server --auth none \
    --bind-addr 127.0.0.1:18080 --disable-telemetry --disable-update-check --disable-workspace-trust \
    --user-data-dir "$TRUTH_DIR/cs/data" --extensions-dir "$TRUTH_DIR/cs/ext" "$TRUTH_DIR/proj"
}
