"""The outside world for one workload: runs in the second network namespace, across the veth "eth0".

Port 8000: HTTP, `GET /stream?rate=B&seconds=S[&every=E]` streams S seconds of data at B bytes/s, a piece
           every E seconds (0.1 by default) (a package mirror; a trickle with a large E).
Port 5432: a database server stand-in (not a real database): a client sends `SLEEP S\n`, the answer
           comes after S seconds, as a long query's result would; `SELECT 1\n` is answered at once.
Port 7000: accepts and stays silent (an idle remote session).
The connection stand-ins (tools/netplay.py has their clients):
Port 8100: a model API: `GET /v1/chat?think=S&every=E&seconds=D`: nothing for S s, then a few bytes every E s
           for D s (tokens), then the end.
Port 8200: a long-poll event service (keep-alive): `GET /events?wait=S` answers "[]" after S s, every time.
Port 8300: a watch stream: `GET /watch?keepalive=K` sends the initial list, then a 16-byte keep-alive every
           K s (never with K=0) and nothing else.
Port 8400: a slow receiver: reads 256 bytes every 2 s (an upload's far end on a bad link).
Port 5672: a message broker stand-in: `SUB queue\n` is answered `OK\n`; then a heartbeat line each way
           every 5 s, no message ever.
Port 9100: a metrics collector: reads lines, never answers.
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
        every = float(q.get("every", ["0.1"])[0])
        end = time.monotonic() + seconds
        chunk = b"x" * max(1, int(rate * every))
        while time.monotonic() < end:
            self.wfile.write(chunk)
            self.wfile.flush()
            time.sleep(every)


class SlowDb(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            parts = line.split()
            if len(parts) == 2 and parts[0] == b"SLEEP":
                time.sleep(min(float(parts[1]), 600))
                self.wfile.write(b"OK 42\n")
            elif parts == [b"SELECT", b"1"]:
                self.wfile.write(b"1\n")
            self.wfile.flush()


def _query(line):
    return parse_qs(urlparse(line.split(" ")[1] if " " in line else "/").query)


def _head(rfile):
    line = rfile.readline().decode("ascii", "replace")
    while rfile.readline() not in (b"\r\n", b"\n", b""):
        pass
    return line


class Model(socketserver.StreamRequestHandler):
    def handle(self):
        q = _query(_head(self.rfile))
        think, every = float(q.get("think", ["0"])[0]), float(q.get("every", ["3"])[0])
        seconds = float(q.get("seconds", ["20"])[0])
        time.sleep(min(think, 600))
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        end, n = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            n += 1
            self.wfile.write(b"data: " + b"tok" * (1 + n % 5) + b"\n\n")  # tokens come in varied sizes
            self.wfile.flush()
            time.sleep(every)


class LongPoll(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = _head(self.rfile)
            if not line:
                return
            time.sleep(min(float(_query(line).get("wait", ["15"])[0]), 600))
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]")
            self.wfile.flush()


class Watch(socketserver.StreamRequestHandler):
    def handle(self):
        keepalive = float(_query(_head(self.rfile)).get("keepalive", ["0"])[0])
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
                         b'{"type":"ADDED","object":{"kind":"Pod","name":"web-1"}}\n')
        self.wfile.flush()
        while True:
            if keepalive <= 0:
                self.rfile.read(1)
                return
            time.sleep(keepalive)
            self.wfile.write(b'{"type":"PING"}\n')
            self.wfile.flush()


class SlowReceiver(socketserver.BaseRequestHandler):
    def handle(self):
        while self.request.recv(256):
            time.sleep(2)


class Broker(socketserver.StreamRequestHandler):
    def handle(self):
        if self.rfile.readline().startswith(b"SUB "):
            self.wfile.write(b"OK\n")
            self.wfile.flush()
        stop = threading.Event()

        def beat():
            while not stop.wait(5):
                try:
                    self.wfile.write(b"HB\n")
                    self.wfile.flush()
                except OSError:
                    return
        threading.Thread(target=beat, daemon=True).start()
        for _line in self.rfile:
            pass
        stop.set()


class Collector(socketserver.StreamRequestHandler):
    def handle(self):
        for _line in self.rfile:
            pass


class Silent(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.recv(1)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    addr = sys.argv[1]
    servers = [Server((addr, 8000), Stream), Server((addr, 5432), SlowDb), Server((addr, 7000), Silent),
               Server((addr, 8100), Model), Server((addr, 8200), LongPoll), Server((addr, 8300), Watch),
               Server((addr, 5672), Broker), Server((addr, 9100), Collector)]
    slow = Server((addr, 8400), SlowReceiver, bind_and_activate=False)
    slow.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # accepted sockets inherit it
    slow.server_bind()
    slow.server_activate()
    servers.append(slow)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    socket.socket().close()
    threading.Event().wait()


if __name__ == "__main__":
    main()
