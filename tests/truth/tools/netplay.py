"""Connection stand-ins for the truth workloads: the clients of tools/outside.py's services, and servers that
run inside the box. Each is what a real program does on the wire, in a few lines of the standard library.

    python3 netplay.py NAME [options]     (see the subcommands below; OUTSIDE in the environment)

Nothing here prints in a loop; every loop ends with the process (the harness ends the namespace).
"""

import argparse
import base64
import hashlib
import os
import socket
import struct
import sys
import threading
import time

OUTSIDE = os.environ.get("OUTSIDE", "127.0.0.1")


def touch(name):
    d = os.environ.get("TRUTH_DIR")
    if d:
        open(os.path.join(d, name), "a").close()


def http_get(sock, path, host="x"):
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n").encode())


def read_head(f):
    """Status line and headers of one HTTP response; returns its Content-Length (or None)."""
    length = None
    f.readline()
    for line in iter(f.readline, b""):
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return length


# -- clients of the outside world ------------------------------------------------------------------------------
def model_call(a):
    """A model API call: the request, then the answer as it streams (after `think` seconds of nothing)."""
    s = socket.create_connection((OUTSIDE, 8100))
    http_get(s, f"/v1/chat?think={a.think:g}&every={a.every:g}&seconds={a.seconds:g}")
    while s.recv(4096):
        pass


def long_poll(a):
    """An event listener long-polling a service that never has an event (a CI runner, a webhook relay)."""
    s = f = None
    while True:
        if s is None or a.reconnect:
            if s is not None:
                s.close()
            s = socket.create_connection((OUTSIDE, 8200))
            f = s.makefile("rb")
        http_get(s, f"/events?wait={a.wait:g}")
        f.read(read_head(f) or 0)
        touch("work_started")


def watch(a):
    """`kubectl get pods --watch`: the initial list, then whatever the server sends (keep-alives or nothing)."""
    s = socket.create_connection((OUTSIDE, 8300))
    http_get(s, f"/watch?keepalive={a.keepalive:g}")
    f = s.makefile("rb")
    read_head(f)
    f.readline()
    touch("work_started")
    for _line in f:
        pass


def pool(a):
    """An app's idle database pool: `SELECT 1` on each connection every `check` seconds (pre-ping)."""
    conns = [socket.create_connection((OUTSIDE, 5432)) for _ in range(a.conns)]
    files = [c.makefile("rwb") for c in conns]
    touch("work_started")
    while True:
        for f in files:
            f.write(b"SELECT 1\n")
            f.flush()
            f.readline()
        time.sleep(a.check)


def consumer(a):
    """A message-queue consumer on an idle queue: subscribed, heartbeats both ways, no message ever."""
    s = socket.create_connection((OUTSIDE, 5672))
    f = s.makefile("rwb")
    f.write(b"SUB jobs\n")
    f.flush()
    f.readline()
    touch("work_started")

    def beat():
        while True:
            time.sleep(5)
            s.sendall(b"HB\n")
    threading.Thread(target=beat, daemon=True).start()
    for _line in f:
        pass


def metrics(a):
    """A metrics agent pushing one line every `every` seconds to a collector that never answers."""
    s = socket.create_connection((OUTSIDE, 9100))
    touch("work_started")
    while True:
        s.sendall(b"box.load 0.01 %d\n" % int(time.time()))
        time.sleep(a.every)


def upload(a):
    """An upload to a slow receiver for `seconds`: the send queue stays full, a little drains at a time."""
    s = socket.create_connection((OUTSIDE, 8400))
    s.settimeout(0.5)
    end, block = time.monotonic() + a.seconds, b"u" * 65536
    while time.monotonic() < end:
        try:
            s.send(block)
        except TimeoutError:
            pass


def query(a):
    """A job waiting on one long query."""
    s = socket.create_connection((OUTSIDE, 5432))
    f = s.makefile("rwb")
    f.write(b"SLEEP %g\n" % a.seconds)
    f.flush()
    f.readline()


def download(a):
    """A download that trickles: a few bytes every few seconds for `seconds`."""
    s = socket.create_connection((OUTSIDE, 8000))
    http_get(s, f"/stream?rate={a.rate:g}&every={a.every:g}&seconds={a.seconds:g}")
    while s.recv(4096):
        pass


# -- servers and clients inside the box ------------------------------------------------------------------------
def dev_server(a):
    """A dev server (HTTP/1.1, keep-alive): answers each request, then holds the connection open."""
    srv = socket.create_server(("127.0.0.1", a.port))

    def serve(c):
        f = c.makefile("rb")
        body = b"<html>hello</html>"
        while read_head_request(f):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nKeep-Alive: timeout=600\r\n\r\n%s" % (len(body), body))

    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def read_head_request(f):
    line = f.readline()
    if not line:
        return False
    for h in iter(f.readline, b""):
        if h in (b"\r\n", b"\n"):
            break
    return True


def browser(a):
    """A browser tab: one page load, then the keep-alive connection stays open, idle."""
    deadline = time.monotonic() + 30
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", a.port))
            http_get(s, "/")
            f = s.makefile("rb")
            f.read(read_head(f) or 0)
            break
        except (OSError, TypeError):  # the forward or the server is not there yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    touch("work_started")
    f.read(1)


def slow_server(a):
    """A server sending one large response at a slow link's pace (a build artifact): after its headers, `--rate`
    bytes a second (a chunk every 0.5 s) for `--seconds`, then the connection closes."""
    srv = socket.create_server(("127.0.0.1", a.port))
    while True:
        c, _ = srv.accept()
        f = c.makefile("rb")
        if not read_head_request(f):
            c.close()
            continue
        chunk = b"x" * max(1, int(a.rate / 2))
        n = max(1, int(a.seconds * 2))
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (len(chunk) * n))
        for _ in range(n):
            c.sendall(chunk)
            time.sleep(0.5)
        c.close()


def chatter_server(a):
    """An editor's server pushing its own chatter to an open tab (presence, telemetry, file-watch echoes), nothing
    asked: bursts of `--rate` bytes a second (a message every 0.25 s) for `--burst` s, every `--every` s."""
    srv = socket.create_server(("127.0.0.1", a.port))
    message = b'{"type":"presence","state":"ok","pad":"' + b"." * max(1, int(a.rate / 4) - 40) + b'"}\n'

    def serve(c):
        try:
            while True:
                end = time.monotonic() + a.burst
                while time.monotonic() < end:
                    c.sendall(message)
                    time.sleep(0.25)
                time.sleep(a.every)
        except OSError:
            c.close()

    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def chatter_client(a):
    """The open tab: connects (until the forward and the server are up), reads whatever comes, never sends."""
    deadline = time.monotonic() + 30
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", a.port))
            if s.recv(65536):
                break
            s.close()
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the chatter server never answered")
        time.sleep(0.5)
    touch("work_started")
    while s.recv(65536):
        pass


WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _ws_frame(opcode, payload=b"", mask=False):
    head = bytes([0x80 | opcode, (0x80 if mask else 0) | len(payload)])
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def _ws_read(f):
    b1, b2 = f.read(2)
    n = b2 & 0x7F
    if n == 126:
        n = struct.unpack("!H", f.read(2))[0]
    key = f.read(4) if b2 & 0x80 else None
    data = f.read(n)
    if key:
        data = bytes(b ^ key[i % 4] for i, b in enumerate(data))
    return b1 & 0x0F, data


def ws_server(a):
    """A dev server's HMR websocket: the upgrade, then a ping every `ping` seconds and no update ever."""
    srv = socket.create_server(("127.0.0.1", a.port))

    def serve(c):
        f = c.makefile("rb")
        key = b""
        f.readline()
        for h in iter(f.readline, b""):
            if h in (b"\r\n", b"\n"):
                break
            if h.lower().startswith(b"sec-websocket-key:"):
                key = h.split(b":")[1].strip()
        accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest())
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        c.sendall(_ws_frame(1, b'{"type":"connected"}'))

        def pings():
            while True:
                time.sleep(a.ping)
                c.sendall(_ws_frame(9, b"hb"))
        threading.Thread(target=pings, daemon=True).start()
        while True:
            _ws_read(f)  # pongs

    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def ws_client(a):
    """The HMR client: connects, answers each ping with a pong, waits for updates that never come."""
    deadline = time.monotonic() + 20
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", a.port))
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET /hmr HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    f = s.makefile("rb")
    read_head(f)
    _ws_read(f)
    touch("work_started")
    while True:
        op, data = _ws_read(f)
        if op == 9:
            s.sendall(_ws_frame(10, data, mask=True))


def kernel(a):
    """A notebook kernel: a heartbeat port that echoes, a shell port that answers requests; nothing to run."""
    def echo(c):
        while True:
            data = c.recv(64)
            if not data:
                return
            c.sendall(data)

    def listen(port, handler):
        srv = socket.create_server(("127.0.0.1", port))
        while True:
            c, _ = srv.accept()
            threading.Thread(target=handler, args=(c,), daemon=True).start()

    threading.Thread(target=listen, args=(a.shell, echo), daemon=True).start()
    listen(a.hb, echo)


def notebook(a):
    """A notebook server: asks the kernel for its info once, then pings its heartbeat every `every` seconds."""
    deadline = time.monotonic() + 20
    while True:
        try:
            hb = socket.create_connection(("127.0.0.1", a.hb))
            shell = socket.create_connection(("127.0.0.1", a.shell))
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    shell.sendall(b'{"msg_type":"kernel_info_request"}')
    shell.recv(4096)
    touch("work_started")
    while True:
        hb.sendall(b"ping")
        hb.recv(64)
        time.sleep(a.every)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn, opts in (
            ("model-call", model_call, (("--think", 0.0), ("--every", 3.0), ("--seconds", 20.0))),
            ("long-poll", long_poll, (("--wait", 15.0),)),
            ("watch", watch, (("--keepalive", 0.0),)),
            ("pool", pool, (("--conns", 5), ("--check", 10.0))),
            ("consumer", consumer, ()),
            ("metrics", metrics, (("--every", 10.0),)),
            ("upload", upload, (("--seconds", 20.0),)),
            ("query", query, (("--seconds", 20.0),)),
            ("download", download, (("--rate", 25.0), ("--every", 2.0), ("--seconds", 20.0))),
            ("dev-server", dev_server, (("--port", 8080),)),
            ("slow-server", slow_server, (("--port", 8081), ("--rate", 8000.0), ("--seconds", 20.0))),
            ("chatter-server", chatter_server, (("--port", 8082), ("--rate", 3000.0), ("--burst", 6.0),
                                                ("--every", 20.0))),
            ("chatter-client", chatter_client, (("--port", 8082),)),
            ("browser", browser, (("--port", 8080),)),
            ("ws-server", ws_server, (("--port", 5173), ("--ping", 5.0))),
            ("ws-client", ws_client, (("--port", 5173),)),
            ("kernel", kernel, (("--hb", 9001), ("--shell", 9002))),
            ("notebook", notebook, (("--hb", 9001), ("--shell", 9002), ("--every", 3.0)))):
        p = sub.add_parser(name)
        p.set_defaults(fn=fn)
        for opt, default in opts:
            p.add_argument(opt, type=type(default), default=default)
        if name == "long-poll":
            p.add_argument("--reconnect", action="store_true", help="a new connection for every poll")
    a = ap.parse_args(argv)
    a.fn(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
