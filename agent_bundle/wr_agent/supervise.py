"""`serve --supervise`: a tiny parent that restarts a dead serve child within 1 s, for hosts without a
systemd user manager. A hand-off happens inside the child (execv keeps its PID), so the parent never
notices; a restart runs the same entry (the install path), which is the new bundle after a push."""

import signal
import subprocess
import sys
import time

from wr_agent.runtime import EXIT_LOCKED, set_comm

EXIT_STARTUP = 2  # serve's exit status for a start-up error (bad flags, health port in use)

RESTART_DELAY = 0.5
FAST_FAILS_BEFORE_BACKOFF = 10
BACKOFF = 5.0


def run(child_argv):
    set_comm("wr-agent-super")
    stopping = []
    child = [None]

    def on_signal(signum, _frame):
        stopping.append(signum)
        if child[0] is not None and child[0].poll() is None:
            child[0].send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    fast_fails = 0
    while not stopping:
        started = time.monotonic()
        child[0] = subprocess.Popen(child_argv)
        code = child[0].wait()
        if stopping:
            break
        if code == EXIT_LOCKED:
            sys.stderr.write("wr-agent supervisor: another agent holds the socket; not restarting\n")
            return code
        quick = time.monotonic() - started < 2.0
        if code == EXIT_STARTUP and quick:
            # Bad flags or a port it cannot bind: restarting would only pile up failures. Say so and stop.
            sys.stderr.write("wr-agent supervisor: serve could not start (exit 2); not restarting\n")
            return code
        fast_fails = fast_fails + 1 if quick else 0
        delay = BACKOFF if fast_fails >= FAST_FAILS_BEFORE_BACKOFF else RESTART_DELAY
        sys.stderr.write("wr-agent supervisor: serve (pid %d) exited with %s; restarting in %g s\n"
                         % (child[0].pid, code, delay))
        time.sleep(delay)
    if child[0] is not None and child[0].poll() is None:
        try:
            child[0].wait(timeout=5)
        except subprocess.TimeoutExpired:
            child[0].kill()
            child[0].wait()
    return 0


def child_argv(entry, argv):
    return list(entry) + [a for a in argv if a != "--supervise"]


def entry_argv():
    from wr_agent.bundle import running_archive
    archive = running_archive()
    return [sys.executable, archive] if archive else [sys.executable, "-m", "wr_agent"]

