# Sourced by every workload. $TRUTH_DIR: its private directory (cwd); $TRUTH_WORK: seconds of work;
# $TRUTH_TOOLS: helpers; $OUTSIDE: the outside world's address (across eth0).
set -u
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
