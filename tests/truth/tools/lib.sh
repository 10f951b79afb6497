# Sourced by every workload. $TRUTH_DIR: its private directory (cwd); $TRUTH_WORK: seconds of work;
# $TRUTH_TOOLS: helpers; $OUTSIDE: the outside world's address (across eth0).
set -u
work_started() { touch "$TRUTH_DIR/work_started"; }
work_done() { touch "$TRUTH_DIR/work_done"; }
work_until() { END=$(( $(date +%s) + ${TRUTH_WORK%.*} )); }
working() { [ "$(date +%s)" -lt "$END" ]; }
# Leave the workload's processes as they are until the harness ends the namespace.
stay() { exec python3 -c 'import signal; signal.pause()'; }
