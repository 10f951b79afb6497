"""A stand-in for the developer's browser tab, on the wire as the real one is (runs on the developer's computer:
the outside namespace, through `ssh -L`). Standard library only; it logs what it saw, the workload's proof.

    browser.py jupyter --port P --token T [--run SECONDS]   a JupyterLab tab on a notebook
    browser.py vite --port P                                a page served by vite with hot reload

jupyter, as JupyterLab 4 behaves with one notebook open and nothing running: loads the server's API (status,
kernelspecs, sessions, kernels, the folder's contents, terminals), starts a notebook session (POST /api/sessions,
which starts a kernel), opens the kernel's websocket (`/api/kernels/<id>/channels`) and asks kernel_info, then
polls as its ServiceManager and file browser do: sessions, kernels, terminals and the open folder's contents
every 10 s, kernelspecs every 61 s, each on the tab's keep-alive connections; it answers the server's websocket
pings. `--run S`: once, it executes a cell `import time; time.sleep(S)` (a cell waiting on something) and logs
its reply.

vite, as a page with vite's client behaves: loads `/`, `/@vite/client` (where it reads the websocket token the
server put there) and the page's module, opens the hot-reload websocket (`/?token=...`, protocol `vite-hmr`),
then sends `{"type":"ping"}` every 30 s (the client's `hmrTimeout`), which the server never answers.
"""

import argparse
import base64
import http.client
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import uuid


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


def touch(name):
    d = os.environ.get("TRUTH_DIR")
    if d:
        open(os.path.join(d, name), "a").close()


class WebSocket:
    """A client websocket (RFC 6455): masked frames out, pongs to pings, messages in."""

    def __init__(self, port, path, headers=(), protocol=None):
        self.sock = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", *headers]
        if protocol:
            lines.append(f"Sec-WebSocket-Protocol: {protocol}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.f = self.sock.makefile("rb")
        status = self.f.readline()
        while self.f.readline() not in (b"\r\n", b""):
            pass
        if b" 101 " not in status:
            raise RuntimeError(f"websocket refused: {status!r}")
        self.lock = threading.Lock()

    def send(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        with self.lock:
            self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_text(self, text):
        self.send(1, text.encode())

    def receive(self):
        """The next message (text or binary), answering pings on the way; None when the server closes."""
        while True:
            head = self.f.read(2)
            if len(head) < 2:
                return None
            n = head[1] & 0x7F
            if n == 126:
                n = struct.unpack("!H", self.f.read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self.f.read(8))[0]
            data = self.f.read(n)
            op = head[0] & 0x0F
            if op == 9:
                self.send(10, data)  # a browser answers pings by itself
            elif op == 8:
                return None
            elif op in (1, 2):
                return data


class Tab:
    """The tab's HTTP/1.1 keep-alive connections (a browser keeps a few open to one origin)."""

    def __init__(self, port, headers):
        self.port, self.headers = port, headers
        self.conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=60) for _ in range(2)]
        self.n = 0

    def request(self, method, path, body=None):
        self.n += 1
        c = self.conns[self.n % len(self.conns)]
        c.request(method, path, body=None if body is None else json.dumps(body), headers=self.headers)
        r = c.getresponse()
        return r.status, r.read()


def wait_for(port, deadline=60.0):
    end = time.monotonic() + deadline
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.5)


def _message(msg_type, channel, content, session):
    return {"header": {"msg_id": uuid.uuid4().hex, "username": "dev", "session": session, "msg_type": msg_type,
                       "version": "5.3", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": []}


def jupyter(a):
    tab = Tab(a.port, {"Authorization": f"token {a.token}", "Content-Type": "application/json"})
    end = time.monotonic() + 120
    while True:  # the server starts as the tunnel comes up
        try:
            wait_for(a.port)
            status, _ = tab.request("GET", "/api/status")
            if status == 200:
                break
        except (OSError, http.client.HTTPException):
            tab = Tab(a.port, tab.headers)
        if time.monotonic() > end:
            raise RuntimeError("the notebook server did not answer")
        time.sleep(1)
    for path in ("/api", "/api/kernelspecs", "/api/sessions", "/api/kernels", "/api/contents?content=1",
                 "/api/terminals"):
        status, _ = tab.request("GET", path)
        log("load", path, status)
    status, body = tab.request("POST", "/api/sessions", {"path": "work.ipynb", "type": "notebook", "name": "",
                                                          "kernel": {"name": "python3"}})
    kernel = json.loads(body)["kernel"]["id"]
    log("session", status, "kernel", kernel)
    session = uuid.uuid4().hex
    ws = WebSocket(a.port, f"/api/kernels/{kernel}/channels?session_id={session}",
                   headers=[f"Authorization: token {a.token}"])
    replies = {}

    def reader():
        while True:
            data = ws.receive()
            if data is None:
                log("websocket closed")
                return
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            kind = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
            if kind and kind.endswith("_reply"):
                log("reply", kind, msg.get("content", {}).get("status", ""))
                replies[msg.get("parent_header", {}).get("msg_id")] = msg

    threading.Thread(target=reader, daemon=True).start()
    info = _message("kernel_info_request", "shell", {}, session)
    ws.send_text(json.dumps(info))
    end = time.monotonic() + 60
    while info["header"]["msg_id"] not in replies and time.monotonic() < end:
        time.sleep(0.2)
    if info["header"]["msg_id"] not in replies:
        raise RuntimeError("no kernel_info_reply")
    if a.run:
        cell = _message("execute_request", "shell", {"code": f"import time\ntime.sleep({a.run:g})", "silent": False,
                                                     "store_history": True, "user_expressions": {},
                                                     "allow_stdin": False, "stop_on_error": True}, session)
        touch("work_started")
        ws.send_text(json.dumps(cell))
        while cell["header"]["msg_id"] not in replies:
            time.sleep(0.2)
        touch("work_done")
    else:
        touch("work_started")
    k = 0
    while True:  # JupyterLab's polls: every 10 s, kernelspecs every 61 s
        time.sleep(1)
        k += 1
        if k % 10 == 0:
            for path in ("/api/sessions", "/api/kernels", "/api/terminals", "/api/contents?content=1"):
                tab.request("GET", path)
        if k % 61 == 0:
            tab.request("GET", "/api/kernelspecs")


def vite(a):
    wait_for(a.port, 120)
    tab = Tab(a.port, {"Accept": "*/*"})
    end = time.monotonic() + 120
    while True:
        try:
            status, page = tab.request("GET", "/")
            if status == 200:
                break
        except (OSError, http.client.HTTPException):
            tab = Tab(a.port, tab.headers)
        if time.monotonic() > end:
            raise RuntimeError("the dev server did not answer")
        time.sleep(1)
    log("load / ", status, len(page))
    status, client = tab.request("GET", "/@vite/client")
    log("load /@vite/client", status, len(client))
    m = re.search(rb'wsToken = "([^"]+)"', client)
    token = m.group(1).decode() if m else ""
    for path in re.findall(rb'<script type="module" src="([^"]+)"', page):
        status, body = tab.request("GET", path.decode())
        log("load", path.decode(), status, len(body))
    ws = WebSocket(a.port, f"/?token={token}", protocol="vite-hmr")
    log("hmr", ws.receive())
    touch("work_started")

    def pings():
        while True:
            time.sleep(a.ping)
            ws.send_text('{"type":"ping"}')

    threading.Thread(target=pings, daemon=True).start()
    while True:
        data = ws.receive()
        if data is None:
            return
        log("hmr", data[:200])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("jupyter")
    j.add_argument("--port", type=int, default=8888)
    j.add_argument("--token", default="truth")
    j.add_argument("--run", type=float, default=0.0)
    j.set_defaults(fn=jupyter)
    v = sub.add_parser("vite")
    v.add_argument("--port", type=int, default=5173)
    v.add_argument("--ping", type=float, default=30.0)
    v.set_defaults(fn=vite)
    a = ap.parse_args()
    a.fn(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
