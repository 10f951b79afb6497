"""Command line: serve, status, request, relay, handoff, bundle, --version (`serve` itself is serve.py)."""

import argparse
import os
import sys

from wr_agent import PROTOCOL, VERSION, bundle, client, runtime

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


def _exclude(text):
    from wr_agent import exclusions
    try:
        return exclusions.parse_exclude(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    s.add_argument("--exclude-pid", type=_exclude, action="append", default=[], metavar="PID[:START]",
                   help="never count this process or its descendants as work; START (field 22 of "
                        "/proc/PID/stat) pins the number to that one process")
    s.add_argument("--cpu-window", type=_positive, default=None, metavar="S",
                   help="judge a process's CPU over this window (default 10)")
    s.add_argument("--watch-window", type=_positive, default=None, metavar="S",
                   help="pty output counts within this long after a keystroke on it (default 600)")
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
    from wr_agent import launcher
    launcher.take_record()  # how this process was launched, before anything it starts could inherit it
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print("wr-agent %s protocol %d build %s" % (VERSION, PROTOCOL, bundle.build_hash()))
        return 0
    try:
        if args.command == "serve" and args.detach:
            from wr_agent import detach, supervise
            return detach.run(supervise.entry_argv(), argv, args.log)
        if args.command == "serve":
            from wr_agent import serve
            return serve.run(args, argv)
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
    except OSError as exc:  # anything the start-up steps did not name: said plainly, never a traceback
        where = " (%s)" % exc.filename if getattr(exc, "filename", None) else ""
        sys.stderr.write("wr-agent: %s%s\n" % (exc.strerror or exc, where))
        return runtime.StartupError.DEFAULT_CODE if args.command == "serve" else 1
    except KeyboardInterrupt:
        return 130
    parser.print_help()
    return 2
