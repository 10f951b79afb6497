"""Command line: serve, status, request, relay, handoff, bundle, --version (names fixed by issue 3)."""

import argparse
import logging
import os
import signal
import socket
import sys
import threading

from wr_agent import PROTOCOL, VERSION, bundle, client, runtime
from wr_agent import settings as settings_mod

log = logging.getLogger("wr_agent")
DEFAULT_SOCKET = os.path.join(os.path.expanduser("~"), ".local", "state", "wr-agent", "agent.sock")
DEFAULT_BUNDLE = os.path.join(os.path.expanduser("~"), ".local", "share", "wr-agent", "wr-agent.pyz")


def _positive(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive finite number: %r" % text)
    return v


def _nonneg(text):
    v = _positive(text) if text not in ("0", "0.0") else 0.0
    return v


def build_parser():
    p = argparse.ArgumentParser(prog="wr-agent", description="Workroom companion's far-side agent.")
    p.add_argument("--version", action="store_true", help="print version, protocol version and build hash")
    sub = p.add_subparsers(dest="command")

    s = sub.add_parser("serve", help="run the agent")
    s.add_argument("--socket", default=DEFAULT_SOCKET)
    s.add_argument("--workroom", default=None)
    s.add_argument("--awake-ceiling", type=float, default=None, metavar="S")
    s.add_argument("--awake-prompt-timeout", type=float, default=None, metavar="S")
    s.add_argument("--ask-at-awake-ceiling", action="store_true", default=None)
    s.add_argument("--heartbeat-interval", type=_positive, default=60.0, metavar="S")
    s.add_argument("--heartbeat-target", default=None, metavar="HOST:PORT")
    s.add_argument("--no-heartbeat", action="store_true")
    s.add_argument("--health-listen", default=None, metavar="HOST:PORT",
                   help="serve GET /v1/health (busy/verdict/stalled only) on this address; [ADDR]:PORT for IPv6")
    s.add_argument("--hold-seconds", type=_nonneg, default=30.0, metavar="S")
    s.add_argument("--tick-seconds", type=_positive, default=1.0, metavar="S")
    s.add_argument("--candidates", choices=("all", "user"), default="all")
    s.add_argument("--test-min-duration", type=_positive, default=None, metavar="S")
    s.add_argument("--sampler", choices=("auto", "proc", "coarse"), default="auto")
    s.add_argument("--supervise", action="store_true")
    s.add_argument("--log", default=None, metavar="FILE")
    s.add_argument("--detach", action="store_true", help="start in a new session and return (no setsid needed)")

    for name, helptext in (("status", "print the agent's status as JSON"),
                           ("relay", "copy stdin/stdout to and from the agent's socket")):
        q = sub.add_parser(name, help=helptext)
        q.add_argument("--socket", default=DEFAULT_SOCKET)
    q = sub.add_parser("request", help="send one request line and print the reply")
    q.add_argument("--socket", default=DEFAULT_SOCKET)
    q.add_argument("json")
    q = sub.add_parser("handoff", help="ask the running agent to re-execute into a new bundle")
    q.add_argument("--socket", default=DEFAULT_SOCKET)
    q.add_argument("--bundle", required=True)
    q.add_argument("--sha256", required=True)
    q = sub.add_parser("bundle", help="write the deterministic zipapp and print its sha256")
    q.add_argument("--out", required=True)
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print("wr-agent %s protocol %d build %s" % (VERSION, PROTOCOL, bundle.build_hash()))
        return 0
    try:
        if args.command == "serve":
            return serve(args, argv)
        if args.command == "status":
            return client.cmd_status(args.socket)
        if args.command == "request":
            return client.cmd_request(args.socket, args.json)
        if args.command == "relay":
            return client.cmd_relay(args.socket)
        if args.command == "handoff":
            return client.cmd_handoff(args.socket, args.bundle, args.sha256)
        if args.command == "bundle":
            print(bundle.write_bundle(args.out))
            return 0
    except client.AgentUnreachable as exc:
        sys.stderr.write("wr-agent: %s\n" % exc)
        return 1
    except runtime.StartupError as exc:
        sys.stderr.write("wr-agent: %s\n" % exc)
        return exc.code
    except KeyboardInterrupt:
        return 130
    parser.print_help()
    return 2


def _initial_settings(args, min_duration):
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


def _setup_logging(path):
    handler = logging.FileHandler(path) if path else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s wr-agent[%(process)d] %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def _make_sampler(args):
    kind = args.sampler
    if kind == "auto":
        kind = "proc" if os.path.isdir("/proc/self") and sys.platform.startswith("linux") else "coarse"
    only_uid = os.getuid() if args.candidates == "user" else None
    if kind == "proc":
        from wr_agent.proc_sampler import ProcSampler
        return ProcSampler(only_uid=only_uid)
    from wr_agent.coarse_sampler import CoarseSampler
    return CoarseSampler(every=5.0 * args.tick_seconds, only_uid=only_uid)  # 5 ticks: ps costs a fork


def serve(args, argv):
    if args.detach:
        from wr_agent import detach, supervise
        return detach.run(supervise.entry_argv(), argv, args.log)
    if args.supervise:
        from wr_agent import supervise
        return supervise.run(supervise.child_argv(supervise.entry_argv(), argv))
    _setup_logging(args.log)
    from wr_agent import health
    from wr_agent.agent import Agent
    from wr_agent.heartbeat import Heartbeat, parse_target

    min_duration = settings_mod.MIN_DURATION
    if args.test_min_duration is not None:
        min_duration = min(args.test_min_duration, settings_mod.MIN_DURATION)
        log.warning("TESTING ONLY: --test-min-duration lowers the 30 s lower bound on durations to %g s",
                    min_duration)
    initial = _initial_settings(args, min_duration)
    health_spec = None
    if args.health_listen is not None:
        try:
            health_spec = health.parse_listen(args.health_listen)  # a bad address refuses before the lock
        except health.HealthListenError as exc:
            raise runtime.StartupError(str(exc)) from None
    else:
        health.drop_inherited()
    sock_path = os.path.abspath(args.socket)
    runtime.prepare_dir(sock_path)
    lock_fd = runtime.acquire_lock(sock_path)
    health_sock = None
    if health_spec is not None:
        # Bound after the lock, so a second agent on this socket still exits 3 ("already serving"), not
        # with the first one's port in use; a failed bind releases the lock before exiting 2.
        try:
            health_sock = health.open_listener(health_spec)
        except health.HealthListenError as exc:
            os.close(lock_fd)
            raise runtime.StartupError(str(exc)) from None
    settings_path = sock_path + ".settings"
    saved, settings_error = settings_mod.load(settings_path, min_duration)
    if settings_error:
        log.error("%s; starting on flags/defaults and leaving the file alone until a valid settings "
                  "request arrives", settings_error)
    target = None
    if args.heartbeat_target:
        try:
            target = parse_target(args.heartbeat_target)
        except ValueError as exc:
            raise runtime.StartupError(str(exc)) from None
    sampler = _make_sampler(args)
    enabled = not args.no_heartbeat and sampler.name == "proc"
    heartbeat = Heartbeat(args.heartbeat_interval, target, enabled, tick_seconds=args.tick_seconds)
    agent = Agent(sampler, saved or initial, heartbeat, args.workroom or socket.gethostname(),
                  bundle.build_hash(), hold_seconds=args.hold_seconds, tick_seconds=args.tick_seconds,
                  settings_path=settings_path, settings_error=settings_error, min_duration=min_duration,
                  test_min_duration=args.test_min_duration)
    agent.saved_settings = saved
    if health_sock is not None:
        agent.health_listen = health.format_address(health_sock)
    state = runtime.take_state(sock_path + ".state")
    if state is not None:
        try:
            agent.restore_state(state)
            log.info("restored ceiling state from a hand-off")
        except (ValueError, settings_mod.SettingsError) as exc:
            log.warning("ignoring hand-off state: %s", exc)
    listen = runtime.listen_socket(sock_path)
    runtime.set_comm("wr-agent")
    from wr_agent.server import Server

    def handoff(bundle_path):
        agent.stop(2.0)
        runtime.write_state(sock_path + ".state", agent.handoff_state())
        if health_sock is not None:
            health.keep_for_handoff(health_sock)  # same port after the exec, even for port 0
        try:
            runtime.exec_into(bundle_path, argv, lock_fd, listen)
        except OSError:
            if health_sock is not None:
                health.release_after_failed_handoff(health_sock)
            try:
                os.unlink(sock_path + ".state")
            except OSError:
                pass
            agent.start()
            raise

    server = Server(agent, listen, handoff)
    stop = threading.Event()

    def on_signal(_signum, _frame):
        stop.set()
        server.wake()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("serving %s (build %s, sampler %s, heartbeat %s)", sock_path, agent.build[:12], sampler.name,
             "on" if enabled else "off")
    agent.start()
    health_server = None
    if health_sock is not None:
        health_server = health.HealthServer(health_sock, lambda: health.agent_answer(agent),
                                            on_traffic=agent.count_own_traffic)
        health_server.start()
        log.info("health endpoint listening on %s (GET %s)", agent.health_listen, health.HEALTH_PATH)
    try:
        server.run(stop)
    finally:
        agent.stop()
        if health_server is not None:
            health_server.stop()
            health_sock.close()
        server.close()
        try:
            os.unlink(sock_path)
        except OSError:
            pass
        listen.close()
        sampler.close()
        heartbeat.close()
    return 0
