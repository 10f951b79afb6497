"""Slow HTTP servers for the held-out workloads, run in the outside world (started over `$SSH_REMOTE`, so they
live in the outside namespace and are no process of the box). Standard library only.

    slowhttp.py MODE --port P --seconds S [--rate B] [--log FILE]

MODE
  stall     any GET: the status line and headers at once, then nothing for S s, then the body (a report an API
            starts answering and then computes; a request asked and not yet answered)
  index     a PyPI "simple" index with one project, truthpkg: the listing at once, the wheel's bytes trickled so
            that the download lasts S s (about B bytes a second) (a slow package mirror)
  registry  an npm registry with one package, truthpkg: its packument only after S s of silence (a cold proxy
            registry fetching upstream)

Writes "ready" to --log once it listens, then one line per request.
"""

import argparse
import base64
import hashlib
import io
import json
import os
import socketserver
import sys
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

A = None
LOG = None


def log(*words):
    print(time.strftime("%H:%M:%S"), *words, file=LOG, flush=True)


def wheel(size):
    """A real, installable wheel of about `size` bytes (random, stored: incompressible padding)."""
    buf = io.BytesIO()
    files = {
        "truthpkg/__init__.py": b"VERSION = '1.0'\n",
        "truthpkg/padding.bin": os.urandom(max(0, size - 1200)),
        "truthpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: truthpkg\nVersion: 1.0\n",
        "truthpkg-1.0.dist-info/WHEEL": (b"Wheel-Version: 1.0\nGenerator: held-out\nRoot-Is-Purelib: true\n"
                                         b"Tag: py3-none-any\n"),
    }
    record = []
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in files.items():
            z.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append("truthpkg-1.0.dist-info/RECORD,,")
        z.writestr("truthpkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return buf.getvalue()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        log("request", fmt % args)

    def send(self, body, ctype="text/plain", trickle=None):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        if trickle is None:
            self.wfile.write(body)
        else:
            seconds, every = trickle
            pieces = max(1, int(seconds / every))
            step = -(-len(body) // pieces)
            for i in range(0, len(body), step):
                self.wfile.write(body[i:i + step])
                self.wfile.flush()
                time.sleep(every)
        self.wfile.flush()

    def do_GET(self):
        log("GET", self.path)
        if A.mode == "stall":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "12")
            self.end_headers()
            self.wfile.flush()
            log("headers sent, body in", A.seconds, "s")
            time.sleep(A.seconds)
            self.wfile.write(b"report: done")
            self.wfile.flush()
            log("body sent")
        elif A.mode == "index":
            if self.path.startswith("/simple/"):
                digest = hashlib.sha256(WHEEL).hexdigest()
                page = (f'<!DOCTYPE html><html><body><a href="/files/truthpkg-1.0-py3-none-any.whl#sha256={digest}">'
                        "truthpkg-1.0-py3-none-any.whl</a></body></html>\n").encode()
                self.send(page, "text/html")
            elif self.path.startswith("/files/"):
                log("wheel of", len(WHEEL), "bytes over", A.seconds, "s")
                self.send(WHEEL, "application/octet-stream", trickle=(A.seconds, 0.5))
                log("wheel sent")
            else:
                self.send_error(404)
        elif A.mode == "registry":
            if self.path.lstrip("/").startswith("truthpkg"):
                time.sleep(A.seconds)
                tarball = f"http://{self.headers.get('Host')}/truthpkg/-/truthpkg-1.0.0.tgz"
                doc = {"name": "truthpkg", "dist-tags": {"latest": "1.0.0"},
                       "versions": {"1.0.0": {"name": "truthpkg", "version": "1.0.0",
                                              "dist": {"tarball": tarball, "shasum": "0" * 40}}},
                       "time": {"1.0.0": "2024-01-01T00:00:00.000Z"}}
                self.send(json.dumps(doc).encode(), "application/json")
                log("packument sent")
            else:
                self.send_error(404)


def main():
    global A, LOG, WHEEL
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("stall", "index", "registry"))
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--bind", default="0.0.0.0")
    ap.add_argument("--log", default="-")
    A = ap.parse_args()
    LOG = sys.stdout if A.log == "-" else open(A.log, "a")  # noqa: SIM115 (open for the server's whole life)
    WHEEL = wheel(int(A.rate * A.seconds)) if A.mode == "index" else b""
    socketserver.TCPServer.allow_reuse_address = True
    server = ThreadingHTTPServer((A.bind, A.port), Handler)
    server.daemon_threads = True
    log("ready", A.mode, A.port)
    server.serve_forever()


if __name__ == "__main__":
    main()
