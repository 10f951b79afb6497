"""A terminal with a human at it: runs a command in a new pty, drains its output, and types.

    pty_drive.py [--type-every S] [--type-for S] [--first-key] [--then-exit] -- CMD...

Keys are written to the pty's master side, so the program reads them from its terminal exactly as it
would read a person's typing (the kernel moves the pty's atime: the agent's keystroke signal). Without
--type-every nobody types: a terminal left open. --first-key types one Enter at start (a user who ran
the command). After --type-for seconds typing stops and the program stays open (--then-exit: the
driver closes the terminal, e.g. a tmux client detaching).
"""

import argparse
import os
import pty
import select
import signal
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--type-every", type=float, default=0.0)
    ap.add_argument("--type-for", type=float, default=0.0)
    ap.add_argument("--keys", default="ihello \x1b")
    ap.add_argument("--first-key", type=float, default=None, metavar="S",
                    help="type one Enter S seconds after opening (a user who runs the command)")
    ap.add_argument("--started", default=None, help="file touched once the first key was typed")
    ap.add_argument("--then-exit", action="store_true")
    ap.add_argument("--marker", default=None, help="file touched when typing ends")
    ap.add_argument("--log", default=None, help="append the terminal's output here")
    ap.add_argument("--ready", default=None, metavar="TEXT",
                    help="wait for TEXT in the output (a login's prompt) before typing; --started is touched then")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    pid, master = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.execvp(a.cmd[0], a.cmd)
    start = time.monotonic()
    next_key = start + 1.0 if a.type_every else None
    if a.ready is not None:
        seen = b""
        deadline = start + 60
        while a.ready.encode() not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 1.0)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    return 1
                seen = (seen + chunk)[-4096:]
        if a.ready.encode() not in seen:
            return 1
        start = time.monotonic()
        next_key = start + 1.0 if a.type_every else None
    if a.first_key is not None:
        end = start + a.first_key
        while time.monotonic() < end:
            if select.select([master], [], [], max(0.0, end - time.monotonic()))[0]:
                os.read(master, 65536)
        os.write(master, b"\n")
        start = time.monotonic()
    if a.started:
        open(a.started, "w").close()
    log = open(a.log, "ab") if a.log else None  # noqa: SIM115 (lives as long as the driver)
    k = 0
    stopped = False
    while True:
        now = time.monotonic()
        if a.type_for and now - start >= a.type_for and not stopped:
            stopped = True
            next_key = None
            if a.marker:
                open(a.marker, "w").close()
            if a.then_exit:
                os.kill(pid, signal.SIGHUP)
                break
        timeout = 1.0 if next_key is None else max(0.0, next_key - now)
        r, _, _ = select.select([master], [], [], timeout)
        if r:
            try:
                out = os.read(master, 65536)
            except OSError:
                break
            if not out:
                break
            if log:
                log.write(out)
                log.flush()
        if next_key is not None and time.monotonic() >= next_key:
            os.write(master, a.keys[k % len(a.keys)].encode())
            k += 1
            next_key += a.type_every
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    if a.then_exit:
        signal.pause()  # the terminal window is closed; the driver itself is no work


if __name__ == "__main__":
    sys.exit(main())
