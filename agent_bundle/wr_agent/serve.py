"""`wr-agent serve`: assemble the agent from its flags, run it until SIGTERM/SIGINT, and tear it down.

Start-up is a list of named steps; everything opened is registered on one `contextlib.ExitStack`, so a
failure at any step (or the normal end) closes exactly what was opened, in reverse order. A hand-off
re-executes the process, so the stack is not unwound then; a failed hand-off leaves everything running.
"""

import contextlib
import os
import signal
import socket
import sys
import threading

from wr_agent import bundle, exclusions, health, log_file, runtime
from wr_agent import settings as settings_mod
from wr_agent.agent import Agent
from wr_agent.agent_log import log
from wr_agent.heartbeat import Heartbeat, parse_target


def run(args, argv):
    """Serve until a signal; returns the exit status (raises runtime.StartupError to refuse to start)."""
    # A bare --exclude-pid binds the process that has the number now; every re-execution (hand-off, the
    # supervisor's restart) carries it pinned to that process's start time.
    argv = exclusions.pin_exclude_argv(argv, exclusions.proc_start_time)
    args.exclude_pid = [exclusions.parse_exclude(v) for v in _exclude_values(argv)]
    if args.supervise:
        from wr_agent import supervise
        return supervise.run(supervise.child_argv(supervise.entry_argv(), argv),
                             [a for a in argv if a != "--supervise"])
    sock_path = os.path.abspath(args.socket)
    runtime.prepare_dir(sock_path)  # checked before the log (often beside the socket) is opened
    setup_logging(args.log)
    min_duration = _min_duration(args)
    initial = initial_settings(args, min_duration)
    health_spec = _health_spec(args)  # a bad address refuses before the lock
    target = _heartbeat_target(args)
    with contextlib.ExitStack() as stack:
        lock_fd = runtime.acquire_lock(sock_path)
        stack.callback(os.close, lock_fd)
        # Bound after the lock, so a second agent on this socket still exits 3 ("already serving"), not
        # with the first one's port in use; a failed bind releases the lock before exiting 2.
        health_sock = _open_health(health_spec)
        if health_sock is not None:
            stack.callback(health_sock.close)
        settings_path = sock_path + ".settings"
        for name in runtime.remove_leftovers(os.path.dirname(sock_path),
                                             (os.path.basename(settings_path), os.path.basename(sock_path) + ".state",
                                              os.path.basename(sock_path) + ".timeline",
                                              os.path.basename(sock_path) + ".exclusions")):
            log.info("removed %s, left behind by a save that did not finish", name)
        saved, settings_error = settings_mod.load(settings_path, min_duration)
        if settings_error:
            log.error("%s; starting on flags/defaults and leaving the file alone until a valid settings "
                      "request arrives", settings_error)
        sampler = make_sampler(args)
        stack.callback(sampler.shutdown)
        heartbeat_on = not args.no_heartbeat and sampler.name == "proc"
        heartbeat = Heartbeat(args.heartbeat_interval, target, heartbeat_on, tick_seconds=args.tick_seconds)
        stack.callback(heartbeat.close)
        agent = Agent(sampler, saved or initial, heartbeat, args.workroom or socket.gethostname(),
                      bundle.build_hash(), hold_seconds=args.hold_seconds, tick_seconds=args.tick_seconds,
                      settings_path=settings_path, settings_error=settings_error, min_duration=min_duration,
                      test_min_duration=args.test_min_duration, saved_settings=saved,
                      health_listen=None if health_sock is None else health.format_address(health_sock))
        if not _restore_handoff_state(agent, sock_path + ".state"):
            agent.recall_ceiling()  # a replacement (not a hand-off): go on from the kept ceiling
        agent.recall_jobs()  # either way the sampler starts afresh: go on from what the last one knew of the jobs
        listen = runtime.listen_socket(sock_path)
        stack.callback(listen.close)
        stack.callback(_unlink_quietly, sock_path)
        runtime.set_comm("wr-agent")

        from wr_agent.server import Server
        server = Server(agent, listen, _handoff_function(agent, sock_path, argv, lock_fd, listen, health_sock))
        stack.callback(server.close)
        stop = threading.Event()
        _on_stop_signals(stop, server)
        log.info("serving %s (build %s, sampler %s, heartbeat %s)", sock_path, agent.build[:12], sampler.name,
                 "on" if heartbeat_on else "off")
        agent.start()
        stack.callback(agent.stop)
        if health_sock is not None:
            health_server = health.HealthServer(health_sock, lambda: health.agent_answer(agent),
                                                on_traffic=agent.count_own_traffic)
            health_server.start()
            stack.callback(health_server.stop)
            log.info("health endpoint listening on %s (GET %s)", agent.health_listen, health.HEALTH_PATH)
        server.run(stop)
    return 0


def _exclude_values(argv):
    for i, a in enumerate(argv):
        if a == "--exclude-pid" and i + 1 < len(argv):
            yield argv[i + 1]
        elif a.startswith("--exclude-pid="):
            yield a[len("--exclude-pid="):]


# -- start-up steps --------------------------------------------------------------------------------------------
def setup_logging(path):
    stream = sys.stderr
    if path:  # never blocks, and only a regular file (a FIFO there would hang the start before the lock)
        fd = log_file.open_log(path)
        try:
            stream = os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")
        except BaseException:
            os.close(fd)
            raise
    log.to_stream(stream)


def _min_duration(args):
    if args.test_min_duration is None:
        return settings_mod.MIN_DURATION
    low = min(args.test_min_duration, settings_mod.MIN_DURATION)
    log.warning("TESTING ONLY: --test-min-duration lowers the 30 s lower bound on durations to %g s", low)
    return low


def initial_settings(args, min_duration):
    """Defaults <- environment <- flags, each validated (bad flags refuse to start; bad env warns)."""
    ceiling, timeout = settings_mod.DEFAULT_CEILING, settings_mod.DEFAULT_PROMPT_TIMEOUT
    ask = os.environ.get("WORKROOM_ASK_AT_AWAKE_CEILING", "") == "1"
    for env, which in (("WORKROOM_AWAKE_CEILING", "ceiling"), ("WORKROOM_AWAKE_PROMPT_TIMEOUT", "timeout")):
        raw = os.environ.get(env)
        if raw is None or raw == "":
            continue
        try:
            value = settings_mod.check_duration(env, float(raw), min_duration)
        except (ValueError, settings_mod.SettingsError) as exc:
            log.warning("ignoring %s=%r: %s", env, raw, getattr(exc, "message", exc))
            continue
        if which == "ceiling":
            ceiling = value
        else:
            timeout = value
    try:
        if args.awake_ceiling is not None:
            ceiling = settings_mod.check_duration("--awake-ceiling", args.awake_ceiling, min_duration)
        if args.awake_prompt_timeout is not None:
            timeout = settings_mod.check_duration("--awake-prompt-timeout", args.awake_prompt_timeout,
                                                  min_duration)
    except settings_mod.SettingsError as exc:
        raise runtime.StartupError(exc.message) from None
    if args.ask_at_awake_ceiling:
        ask = True
    return settings_mod.Settings(ceiling, timeout, ask)


def _health_spec(args):
    if args.health_listen is None:
        health.drop_inherited()
        return None
    try:
        return health.parse_listen(args.health_listen)
    except health.HealthListenError as exc:
        raise runtime.StartupError(str(exc)) from None


def _open_health(spec):
    if spec is None:
        return None
    try:
        return health.open_listener(spec)
    except health.HealthListenError as exc:
        raise runtime.StartupError(str(exc)) from None


def _heartbeat_target(args):
    if not args.heartbeat_target:
        return None
    try:
        return parse_target(args.heartbeat_target)
    except ValueError as exc:
        raise runtime.StartupError(str(exc)) from None


def make_sampler(args):
    kind = args.sampler
    if kind == "auto":
        kind = "proc" if os.path.isdir("/proc/self") and sys.platform.startswith("linux") else "coarse"
    only_uid = os.getuid() if args.candidates == "user" else None
    if kind == "proc":
        from wr_agent import proc_sampler
        return proc_sampler.ProcSampler(
            only_uid=only_uid, exclude_pids=args.exclude_pid, tick_seconds=args.tick_seconds,
            cpu_window=args.cpu_window or proc_sampler.CPU_WINDOW,
            watch_window=args.watch_window or proc_sampler.WATCH_WINDOW)
    from wr_agent.coarse_sampler import CoarseSampler
    return CoarseSampler(every=5.0 * args.tick_seconds, only_uid=only_uid,  # 5 ticks: ps costs a fork
                         exclude_pids=args.exclude_pid)


def _restore_handoff_state(agent, state_path):
    """True when a hand-off's state was taken."""
    state = runtime.take_state(state_path)
    if state is None:
        return False
    try:
        agent.restore_state(state)
        log.info("restored ceiling state from a hand-off")
        return True
    except Exception as exc:  # the file is input like any other: a bad one costs the state, never the start
        log.warning("ignoring hand-off state: %s", exc)
        return False


def _on_stop_signals(stop, server):
    def on_signal(_signum, _frame):
        stop.set()
        server.wake()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


# -- hand-off ----------------------------------------------------------------------------------------------
def _handoff_function(agent, sock_path, argv, lock_fd, listen, health_sock):
    """The server's hand-off callable: save state, re-execute into `bundle_path` (returns only on failure)."""
    state_path = sock_path + ".state"

    def handoff(bundle_path, sha256=None):
        agent.stop(2.0)
        try:
            runtime.write_state(state_path, agent.handoff_state())
            if health_sock is not None:
                health.keep_for_handoff(health_sock)  # same port after the exec, even for port 0
            runtime.exec_into(bundle_path, argv, lock_fd, listen, sha256)
        except BaseException:
            # Whatever failed (a full disk for the state file, an exec error), the old agent carries on
            # exactly as before: ticks, heartbeat and the server's clients and subscriptions.
            if health_sock is not None:
                health.release_after_failed_handoff(health_sock)
            _unlink_quietly(state_path)
            agent.start()
            raise

    return handoff
