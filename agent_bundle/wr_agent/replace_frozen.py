"""The installer's repair of an agent that holds its lock but does not answer (stopped by a signal or a debugger,
deadlocked): `replace_frozen SOCKET` kills it — only once it is verified as this user's agent serving SOCKET
(agent_process) — so that its supervisor starts a fresh one, which goes on from the ceiling it kept
(docs/agent.md, "A replacement goes on from the kept ceiling"). A frozen process cannot hand off, and SIGTERM
waits in a stopped one: SIGKILL is the only signal it takes.

Prints one JSON line: {"killed": pid} (null when the lock was already free) or {"refused": why}, exit 1 then.
The app carries this file's text in its command, from its own bundle (remote/host_python.py).
"""

import json
import os
import signal
import sys
import time

from wr_agent.agent_process import lock_holder, why_not_our_agent
from wr_agent.state_folder import unsafe_state_folder

FREE_SECONDS = 5.0


def replace(sock, free_seconds=FREE_SECONDS):
    """Kill the frozen agent on `sock` if it is ours; the answer's dict."""
    why = unsafe_state_folder(os.path.dirname(sock))  # its lock could be anyone's
    if why is not None:
        return {"refused": why}
    pid = lock_holder(sock)
    if pid is None:
        return {"killed": None}
    why = why_not_our_agent(pid, sock)
    if why is not None:
        return {"refused": why}
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as e:
        return {"refused": "could not stop process %d: %s" % (pid, e.strerror or e)}
    end = time.monotonic() + free_seconds
    while lock_holder(sock) == pid and time.monotonic() < end:
        time.sleep(0.05)
    return {"killed": pid}


def main(argv):
    """`SOCKET`."""
    answer = replace(os.path.expanduser(argv[0]))
    sys.stdout.write(json.dumps(answer) + "\n")
    return 1 if "refused" in answer else 0
