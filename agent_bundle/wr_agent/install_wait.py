"""The installer's wait after a start, hand-off or restart: until the agent answers as it should.

`install_wait SOCKET SECONDS build=HASH` waits until the agent on SOCKET says hello as build HASH (a start or
a hand-off took); `install_wait SOCKET SECONDS checking` until it answers `status` as not stalled (a restart
took). Exit 0 then; past SECONDS, exit 1 with why in words on stderr. The app carries this file's text in
its command, from its own bundle (remote/host_python.py).
"""

import json
import os
import socket
import sys
import time

from wr_agent.state_folder import unsafe_state_folder

CONNECT_TIMEOUT_SECONDS = 2
RETRY_SECONDS = 0.05
SKIP_LINES = 100
WAIT_ID = "w"


def answers(f, build):
    """(whether the agent on this stream is as wanted, what it is otherwise): its hello's build is `build`,
    or (`build` None) its status says it is not stalled."""
    hello = json.loads(f.readline())
    if build is not None:
        return hello.get("build") == build, "agent still runs build %s" % hello.get("build")
    f.write(('{"id":"%s","method":"status"}\n' % WAIT_ID).encode())
    f.flush()
    for _ in range(SKIP_LINES):  # skip events; the reply carries our id
        reply = json.loads(f.readline())
        if reply.get("id") == WAIT_ID:
            return (reply.get("result") or {}).get("stalled") is False, "still stalled"
    return False, "no answer to status"


def wait_for_agent(sock, timeout, build=None):
    """None once the agent on `sock` answers as wanted (see `answers`) within `timeout` seconds, else why
    not in words."""
    why = unsafe_state_folder(os.path.dirname(sock))
    if why:
        return "refusing the agent's socket %s: %s" % (sock, why)
    deadline, last = time.monotonic() + timeout, "no answer"
    while time.monotonic() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.settimeout(CONNECT_TIMEOUT_SECONDS)
                s.connect(sock)
                ok, last = answers(s.makefile("rwb"), build)
            finally:
                s.close()
            if ok:
                return None
        except (OSError, ValueError, AttributeError) as e:
            last = str(e)
        time.sleep(RETRY_SECONDS)
    return "the agent did not come up %s within %.0f s (%s)" % (
        "with the new build" if build else "checking", timeout, last)


def main(argv):
    """`SOCKET SECONDS build=HASH|checking`."""
    sock, timeout, want = os.path.expanduser(argv[0]), float(argv[1]), argv[2]
    build = want[len("build="):] if want.startswith("build=") else None
    why = wait_for_agent(sock, timeout, build)
    if why:
        sys.stderr.write(why + "\n")
        return 1
    return 0
