"""The outside world for one workload: runs in the second network namespace, across the veth "eth0".

Port 8000: HTTP, `GET /stream?rate=B&seconds=S` streams S seconds of data at B bytes/s (a package mirror).
Port 5432: a database server stand-in (not a real database): a client sends `SLEEP S\n`, the answer
           comes after S seconds, as a long query's result would.
Port 7000: accepts and stays silent (an idle remote session).
"""

import socket
import socketserver
import sys
import threading
import time
from urllib.parse import parse_qs, urlparse


class Stream(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline().decode("ascii", "replace")
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        q = parse_qs(urlparse(line.split(" ")[1] if " " in line else "/").query)
        rate = int(q.get("rate", ["20000"])[0])
        seconds = float(q.get("seconds", ["5"])[0])
        self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         b"Content-Length: %d\r\n\r\n" % int(rate * seconds))
        end = time.monotonic() + seconds
        chunk = b"x" * max(1, rate // 10)
        while time.monotonic() < end:
            self.wfile.write(chunk)
            time.sleep(0.1)


class SlowDb(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            parts = line.split()
            if len(parts) == 2 and parts[0] == b"SLEEP":
                time.sleep(min(float(parts[1]), 600))
                self.wfile.write(b"OK 42\n")


class Silent(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.recv(1)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    addr = sys.argv[1]
    servers = [Server((addr, 8000), Stream), Server((addr, 5432), SlowDb), Server((addr, 7000), Silent)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    socket.socket().close()
    threading.Event().wait()


if __name__ == "__main__":
    main()
