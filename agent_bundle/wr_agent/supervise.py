"""`serve --supervise`: a tiny parent that restarts a dead serve child within 1 s, for hosts without a
systemd user manager. A hand-off happens inside the child (execv keeps its PID), so the parent never
notices; a restart runs the same entry (the install path), which is the new bundle after a push. A restart
that cannot start the child at all (no process or memory to spare, the interpreter gone for a moment) is
retried on the same back-off: the supervisor itself never gives up on that."""

import os
import re
import signal
import subprocess
import sys
import threading
import time

from wr_agent import launcher, runtime
from wr_agent.log_file import EXIT_BAD_LOG
from wr_agent.runtime import EXIT_LOCKED, set_comm

EXIT_STARTUP = 2  # serve's exit status for a start-up error (bad flags, health port in use)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

RESTART_DELAY = 0.5
FAST_FAILS_BEFORE_BACKOFF = 10
BACKOFF = 5.0


def run(child_argv, args=None):
    """Restart `child_argv` (or, launched through the launcher, the launcher with `args`) when it dies."""
    set_comm("wr-agent-super")
    stopping = []
    child = [None]
    record = launcher.take_record()
    expected = [record["sha256"]] if record else None
    pass_fds, env = (), None
    if record is not None:
        # The expected hash lives here, outside the bundle; a hand-off in the child tells us the new one.
        read_end, write_end = os.pipe()
        pass_fds = (write_end,)
        env = dict(os.environ, **{runtime.SUPERVISOR_FD_ENV: str(write_end)})
        threading.Thread(target=_follow_hashes, args=(read_end, expected), name="wr-agent-super-hash",
                         daemon=True).start()

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
            argv = child_argv if record is None else launcher.relaunch_entry(record, expected[0]) + list(args)
            child[0] = subprocess.Popen(argv, pass_fds=pass_fds, env=env)
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
        if code == launcher.EXIT_REFUSED:
            sys.stderr.write("wr-agent supervisor: the launcher refused to start the agent (see above); not "
                             "restarting until the app connects again\n")
            return code
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


def _follow_hashes(fd, expected):
    """Keep `expected[0]` at the last sha256 a hand-off in the child reported (one hex line each)."""
    buf = b""
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            return
        if not data:
            return
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            text = line.decode("ascii", "replace").strip()
            if _HEX64.match(text):
                expected[0] = text


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
    record = launcher.take_record()
    if record is not None:  # launched through the launcher: every start goes through it again
        return launcher.relaunch_entry(record)
    from wr_agent.bundle import running_archive
    archive = running_archive()
    return [sys.executable, *launcher.AGENT_FLAGS, archive] if archive else [sys.executable, "-m", "wr_agent"]

