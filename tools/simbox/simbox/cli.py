"""`workroom-simbox up|status|down|wake|sleep` (also `python -m simbox ...`).

`configure(parser)` adds the sub-commands to any argparse parser and `run(args)` executes them, so the
main `workroom` CLI can mount the same commands without duplicating them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from simbox import control
from simbox.state import SimboxError

EXIT_ERROR = 1
EXIT_NOT_UP = 3


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="simbox_cmd", required=True, metavar="{up,status,down,wake,sleep}")
    p = sub.add_parser("up", help="start the daemon and its boxes (root)")
    p.add_argument("--boxes", type=int, default=1, help="how many boxes (default 1)")
    p.add_argument("--idle-window", type=float, required=True, metavar="S",
                   help="seconds of silence on a box's tap before it sleeps")
    p.add_argument("--ipv6-on", action="store_true",
                   help="leave IPv6 on in the boxes (router solicitations then keep them up)")
    p.add_argument("--freezer", choices=["auto", "cgroup2", "cgroup1", "signal"], default="auto")
    p.add_argument("--metering", choices=["network", "requests"], default="network",
                   help="network: tap bytes + proxied connections; requests: only requests "
                        "through the box's HTTP proxy count")
    p.add_argument("--guest-port", type=int, default=8080, metavar="PORT",
                   help="with --metering requests: the HTTP port inside the box the proxy forwards to")
    p.add_argument("--json", action="store_true", help="print the connection details as JSON")
    p = sub.add_parser("status", help="each box's state and idle clock (never wakes a box)")
    p.add_argument("--json", action="store_true")
    sub.add_parser("down", help="stop the daemon and remove every box")
    for name in ("wake", "sleep"):
        p = sub.add_parser(name, help=f"{name} one box now")
        p.add_argument("box")
        p.add_argument("--json", action="store_true")


def _print_status(data: dict[str, Any]) -> None:
    print(f"simbox daemon {data['daemon_pid']}, window {data['idle_window_s']:g} s, freezer {data['freezer']}")
    for b in data["boxes"]:
        last = time.strftime("%H:%M:%S", time.localtime(b["last_byte_at"])) if b["last_byte_at"] else "-"
        print(f"  {b['name']:<6} {b['state']:<6} idle {b['idle_for_s']:6.1f}/{b['idle_window_s']:g} s  "
              f"last byte {last}  conns {b['open_connections']}  sleeps {b['sleeps']} wakes {b['wakes']}  "
              f"ssh {b['ssh']['user']}@127.0.0.1:{b['ssh']['port']}")


def run(args: argparse.Namespace) -> int:
    try:
        cmd = args.simbox_cmd
        if cmd == "up":
            state = control.up(args.boxes, args.idle_window, ipv6=args.ipv6_on, freezer=args.freezer,
                               metering=args.metering, guest_port=args.guest_port)
            info = control.connection_info(state)
            if args.json:
                print(json.dumps(info, indent=2))
            else:
                print(f"simbox up: {len(info['boxes'])} box(es), window {info['idle_window_s']:g} s, "
                      f"metering {info['metering']}, freezer {info['freezer']}, health {info['health_url']}/")
                for b in info["boxes"]:
                    print(f"  {b['name']}: ssh -i {b['client_key']} -p {b['ssh_port']} "
                          f"{b['user']}@127.0.0.1" + (f"   http {b['http_url']}" if b["http_url"] else ""))
            return 0
        if cmd == "status":
            if control.load() is None:
                print("simbox is not up", file=sys.stderr)
                return EXIT_NOT_UP
            data = control.status()
            if args.json:
                print(json.dumps(data, indent=2))
            else:
                _print_status(data)
            return 0
        if cmd == "down":
            report = control.down()
            if not report["was_up"]:
                print("simbox was not up; nothing to do")
            for p in report["problems"]:
                print(f"could not remove: {p}", file=sys.stderr)
            if report["was_up"] and not report["problems"]:
                print(f"simbox down (daemon {report['daemon_pid']} stopped, everything removed)")
            return EXIT_ERROR if report["problems"] else 0
        if cmd in ("wake", "sleep"):
            data = control.wake(args.box) if cmd == "wake" else control.sleep(args.box)
            if args.json:
                print(json.dumps(data, indent=2))
            else:
                ev = data["event"]
                extra = f" in {ev['wake_s'] * 1000:.1f} ms" if ev and "wake_s" in ev else ""
                print(f"{args.box}: {data['box']['state']}{extra}" + ("" if data["changed"] else " (already)"))
            return 0
    except SimboxError as exc:
        print(f"simbox: {exc}", file=sys.stderr)
        return EXIT_ERROR
    raise AssertionError(cmd)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_daemon"]:
        from simbox import daemon

        return daemon.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m simbox",
                                     description="A sleepable box on this machine (Linux, root).")
    configure(parser)
    return run(parser.parse_args(argv))
