"""A job worker as rq's and Sidekiq's behave on an idle queue: a blocking pop (BLPOP, `--timeout` seconds) on a
real Redis, asked again each time it times out, one job run for each one popped. Redis's protocol (RESP) in a few
lines of the standard library; it logs each empty answer (the workload's proof).

    worker.py --socket PATH [--timeout 5] [--queue jobs]
"""

import argparse
import socket
import sys
import time


def command(f, *args):
    f.write(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
    f.flush()
    return reply(f)


def reply(f):
    line = f.readline()
    kind, rest = line[:1], line[1:].strip()
    if kind in (b"+", b"-", b":"):
        return rest
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind in (b"*", b"_"):
        n = int(rest or b"-1")
        return None if n < 0 else [reply(f) for _ in range(n)]
    raise RuntimeError(f"bad reply {line!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--timeout", type=int, default=5)
    ap.add_argument("--queue", default="jobs")
    a = ap.parse_args()
    s = socket.socket(socket.AF_UNIX)
    s.connect(a.socket)
    f = s.makefile("rwb")
    while True:
        got = command(f, b"BLPOP", a.queue.encode(), str(a.timeout).encode())
        if got is None:
            print(time.strftime("%H:%M:%S"), "no job", flush=True)
        else:
            print(time.strftime("%H:%M:%S"), "job", got[1][:60], flush=True)


if __name__ == "__main__":
    sys.exit(main())
