"""`serve --supervise`: a tiny parent that restarts a dead serve child within 1 s, for hosts without a
systemd user manager. A hand-off happens inside the child (execv keeps its PID), so the parent never
notices; a restart runs the same entry (the install path), which is the new bundle after a push. A restart
that cannot start the child at all (no process or memory to spare, the interpreter gone for a moment) is
retried on the same back-off: the supervisor itself never gives up on that."""

import signal
import subprocess
import sys
import time

from wr_agent.log_file import EXIT_BAD_LOG
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
    failed_starts = 0  # in a row: said once when the first fails and once when one starts again
    while not stopping:
        started = time.monotonic()
        try:
            child[0] = subprocess.Popen(child_argv)
        except (OSError, subprocess.SubprocessError) as exc:
            # Out of processes (EAGAIN from a pids limit or RLIMIT_NPROC), out of memory, the interpreter
            # gone for a moment: the supervisor stays and tries again, as after a quick exit.
            child[0] = None
            failed_starts += 1
            fast_fails += 1
            delay = _delay(fast_fails)
            if failed_starts == 1:
                sys.stderr.write("wr-agent supervisor: could not start serve: %s; retrying every %g s (every "
                                 "%g s after %d quick failures)\n"
                                 % (_reason(exc), RESTART_DELAY, BACKOFF, FAST_FAILS_BEFORE_BACKOFF))
            _sleep(delay, stopping)
            continue
        if failed_starts:
            sys.stderr.write("wr-agent supervisor: serve started (pid %d) after %d failed attempts\n"
                             % (child[0].pid, failed_starts))
            failed_starts = 0
        code = child[0].wait()
        if stopping:
            break
        if code == EXIT_LOCKED:
            sys.stderr.write("wr-agent supervisor: another agent holds the socket; not restarting\n")
            return code
        quick = time.monotonic() - started < 2.0
        if code in (EXIT_STARTUP, EXIT_BAD_LOG) and quick:
            # Bad flags, a port it cannot bind, a log that is not a file: restarting would only pile up
            # failures. Say so and stop.
            sys.stderr.write("wr-agent supervisor: serve could not start (exit %d); not restarting\n" % code)
            return code
        fast_fails = fast_fails + 1 if quick else 0
        delay = _delay(fast_fails)
        sys.stderr.write("wr-agent supervisor: serve (pid %d) exited with %s; restarting in %g s\n"
                         % (child[0].pid, code, delay))
        _sleep(delay, stopping)
    if child[0] is not None and child[0].poll() is None:
        try:
            child[0].wait(timeout=5)
        except subprocess.TimeoutExpired:
            child[0].kill()
            child[0].wait()
    return 0


def _delay(fast_fails):
    return BACKOFF if fast_fails >= FAST_FAILS_BEFORE_BACKOFF else RESTART_DELAY


def _sleep(seconds, stopping):
    """Sleep, but end early once a stop signal has arrived (a back-off must not delay SIGTERM)."""
    deadline = time.monotonic() + seconds
    while not stopping and time.monotonic() < deadline:
        time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))


def _reason(exc):
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (" (%s)" % exc.filename if exc.filename else "")
    return str(exc) or type(exc).__name__


def child_argv(entry, argv):
    return list(entry) + [a for a in argv if a != "--supervise"]


def entry_argv():
    from wr_agent.bundle import running_archive
    archive = running_archive()
    return [sys.executable, archive] if archive else [sys.executable, "-m", "wr_agent"]

