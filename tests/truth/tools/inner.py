"""PID 1 of one workload's namespaces (runs as root, started by the harness through `unshare`).

Starts the real agent and the workload script as the test user, reaps orphans as an init must, and on
SIGTERM exits: the kernel then kills everything left in the PID namespace.
"""

import json
import os
import signal
import subprocess
import sys
import time


def main():
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    user = {"user": cfg["uid"], "group": cfg["gid"], "extra_groups": []}
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cfg["home"], "TRUTH_DIR": cfg["dir"],
           "TRUTH_WORK": str(cfg["work"]), "TRUTH_TOOLS": cfg["tools"], "OUTSIDE": cfg["outside"],
           "TMUX_TMPDIR": cfg["dir"], "LANG": "C.UTF-8", "TERM": "xterm", "PYTHONDONTWRITEBYTECODE": "1",
           **cfg.get("env", {})}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(os.path.join(cfg["dir"], "agent.log"), "ab") as log:
        subprocess.Popen(cfg["agent"], env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                         cwd=cfg["dir"], **user)
    deadline = time.monotonic() + 20
    while not os.path.exists(cfg["socket"]) and time.monotonic() < deadline and not stop:
        time.sleep(0.1)
    if cfg.get("sshd"):
        # The box's sshd (root, a system daemon); the workload is an ssh client outside the box.
        with open(os.path.join(cfg["dir"], "sshd.log"), "ab") as log:
            subprocess.Popen(cfg["sshd"], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    else:
        with open(os.path.join(cfg["dir"], "workload.log"), "ab") as log:
            subprocess.Popen(["/bin/bash", cfg["script"]], env=env, stdout=log, stderr=log,
                             stdin=subprocess.DEVNULL, cwd=cfg["dir"], **user)
    while not stop:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
