"""`relay`: copy stdin to the agent's socket and the socket to stdout (docs/protocol.md, transport).

The app starts it on every connect over SSH, so it is the bundle's hot path: the entry point runs it
without the command line's parser and the rest of the agent (only the standard modules it needs below), and
a reconnect runs this file's text straight from the install probe's command (docs/protocol.md, transport).
"""

import os
import select
import sys
import time

try:  # the socket module's C core: `socket` builds its enums at import (~10 ms of CPU here, as long as Python's start)
    from _socket import AF_UNIX, SHUT_WR, SOCK_STREAM
    from _socket import socket as _unix_socket
except ImportError:  # an interpreter without it
    from socket import AF_UNIX, SHUT_WR, SOCK_STREAM
    from socket import socket as _unix_socket

from wr_agent.proc_name import set_comm
from wr_agent.state_folder import unsafe_state_folder


class Unreachable(Exception):
    pass


def run(path, drain_seconds=5.0):
    """Copy stdin to the socket and the socket to stdout, byte for byte, until either side closes.

    When stdin closes, the socket is half-closed so replies to what was already sent still come out
    (the agent closes its end when it sees the half-close); that wait is bounded."""
    set_comm("wr-agent-relay")
    why = unsafe_state_folder(os.path.dirname(path))
    if why:
        raise Unreachable("refusing the agent's socket %s: %s" % (path, why))
    sock = _unix_socket(AF_UNIX, SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        raise Unreachable("no wr-agent answers on %s: %s" % (path, exc.strerror or exc)) from None
    fin, fout = sys.stdin.fileno(), sys.stdout.fileno()
    reading, deadline = [fin, sock], None
    while True:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select(reading, [], [], timeout)
        if not ready and deadline is not None:
            return 0
        if sock in ready:
            data = sock.recv(65536)
            if not data:
                return 0
            view = memoryview(data)
            while view:
                view = view[os.write(fout, view):]
        if fin in ready:
            data = os.read(fin, 65536)
            if not data:
                sock.shutdown(SHUT_WR)
                reading, deadline = [sock], time.monotonic() + drain_seconds
                continue
            sock.sendall(data)


def main(argv):
    """`relay --socket PATH` exactly (what the app runs; a PATH under `~` is this user's home, as the app's
    commands send it quoted); None for anything else (the full parser takes it)."""
    if len(argv) != 3 or argv[0] != "relay" or argv[1] != "--socket":
        return None
    try:
        return run(os.path.expanduser(argv[2]))
    except Unreachable as exc:
        sys.stderr.write("wr-agent: %s\n" % exc)  # as the full command line says it
        return 1
    except OSError as exc:
        sys.stderr.write("wr-agent: %s\n" % (exc.strerror or exc))
        return 1
    except KeyboardInterrupt:
        return 130
