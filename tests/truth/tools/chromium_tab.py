"""The developer's real browser tab: Debian's Chromium, headless, driven over the DevTools protocol (standard
library only: a minimal RFC 6455 client of its own), on VS Code's server (code-server) through `ssh -L`. Runs on the
developer's computer (the truth harness's outside namespace); what it saw goes to stderr, the workload's proof.

    chromium_tab.py idle URL FOLDER [--file NAME] [--seconds N] [--ready-file F]   open, then leave it untouched
    chromium_tab.py type URL FOLDER --file NAME [--text WORDS]                       type a line, save with Ctrl+S

The tab is ready when the workbench is drawn, the Explorer lists the folder (the server connection is up) and the
file's editor shows its text (about 3 s). An untouched tab is not silent: each of its two websockets (management,
extension host) exchanges a KeepAlive every 5 s both ways (6 B from the server, 10 B from the browser), one-off
messages follow in the first minute (a latency report, a window-active change), and every 5 minutes the workbench
asks for the extension list (~350 B). Chromium runs in its own process group and is stopped by its PID.
"""
import argparse
import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def log(*a):
    print(f"[tab {time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


class WebSocket:
    """Minimal client: text frames, fragmentation, ping/pong, close. No extensions."""

    def __init__(self, url, timeout=30.0):
        u = urllib.parse.urlparse(url)
        assert u.scheme == "ws", url
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = u.path + (("?" + u.query) if u.query else "")
        req = (f"GET {path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        data = b""
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in data:
            if time.monotonic() > deadline:
                raise TimeoutError("websocket handshake")
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during handshake")
            data += chunk
        head, self.buf = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        if " 101 " not in lines[0] + " ":
            raise ConnectionError("handshake failed: " + lines[0])
        hdrs = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if hdrs.get("sec-websocket-accept") != want:
            raise ConnectionError("bad Sec-WebSocket-Accept")
        self.closed = False

    def _send_frame(self, opcode, payload):
        hdr = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
        self.sock.sendall(hdr + mask + masked)

    def send(self, text):
        self._send_frame(0x1, text.encode())

    def _parse(self):
        """One complete frame from self.buf, or None. Server frames are unmasked."""
        b = self.buf
        if len(b) < 2:
            return None
        fin, op = b[0] & 0x80, b[0] & 0x0F
        masked, n, off = b[1] & 0x80, b[1] & 0x7F, 2
        if n == 126:
            if len(b) < 4:
                return None
            n, off = struct.unpack("!H", b[2:4])[0], 4
        elif n == 127:
            if len(b) < 10:
                return None
            n, off = struct.unpack("!Q", b[2:10])[0], 10
        mk = b""
        if masked:
            mk, off = b[off:off + 4], off + 4
        if len(b) < off + n:
            return None
        payload = b[off:off + n]
        if masked:
            payload = bytes(x ^ mk[i & 3] for i, x in enumerate(payload))
        self.buf = b[off + n:]
        return bool(fin), op, payload

    def recv(self, timeout):
        """Next text message (str), or None if `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        parts, first_op = [], None
        while True:
            fr = self._parse()
            if fr is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    if parts:  # keep partial message for next call
                        raise TimeoutError("timeout inside fragmented message")
                    return None
                self.sock.settimeout(left)
                try:
                    chunk = self.sock.recv(1 << 16)
                except TimeoutError:
                    continue
                if not chunk:
                    self.closed = True
                    raise ConnectionError("websocket closed by peer")
                self.buf += chunk
                continue
            fin, op, payload = fr
            if op == 0x9:                       # ping -> pong
                self._send_frame(0xA, payload)
                continue
            if op == 0xA:                       # pong
                continue
            if op == 0x8:                       # close
                self.closed = True
                try:
                    self._send_frame(0x8, payload[:2])
                except OSError:
                    pass
                raise ConnectionError("websocket close frame")
            if op in (0x1, 0x2):
                first_op, parts = op, [payload]
            elif op == 0x0:
                parts.append(payload)
            if fin:
                data = b"".join(parts)
                return data.decode("utf-8", "replace") if first_op == 0x1 else data.decode("latin-1")

    def close(self):
        if not self.closed:
            try:
                self._send_frame(0x8, struct.pack("!H", 1000))
            except OSError:
                pass
        self.sock.close()


class CDP:
    def __init__(self, ws):
        self.ws, self.next_id, self.nevents = ws, 0, 0

    def call(self, method, params=None, session=None, timeout=30.0):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(method)
            raw = self.ws.recv(left)
            if raw is None:
                continue
            m = json.loads(raw)
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.nevents += 1                   # events are ignored

    def drain(self, seconds):
        """Read (and ignore) events for `seconds`, keeping the socket serviced."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.ws.recv(min(left, 5.0)) is not None:
                self.nevents += 1


class Tab:
    def __init__(self, cdp, session):
        self.cdp, self.s = cdp, session

    def eval(self, expr, timeout=30.0):
        r = self.cdp.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                               "awaitPromise": True}, self.s, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def wait_for(self, expr, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                v = self.eval(expr)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(0.5)
        raise TimeoutError(f"waiting for {what} ({timeout}s)")

    def key(self, key, code, vk, text=None, modifiers=0):
        down = {"type": "keyDown" if text else "rawKeyDown", "key": key, "code": code,
                "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk, "modifiers": modifiers}
        if text:
            down.update(text=text, unmodifiedText=text)
        self.cdp.call("Input.dispatchKeyEvent", down, self.s)
        self.cdp.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code,
                                                 "windowsVirtualKeyCode": vk,
                                                 "nativeVirtualKeyCode": vk,
                                                 "modifiers": modifiers}, self.s)

    def type_text(self, text):
        for c in text:
            if c.isalpha():
                self.key(c, "Key" + c.upper(), ord(c.upper()), c)
            elif c.isdigit():
                self.key(c, "Digit" + c, ord(c), c)
            elif c == " ":
                self.key(" ", "Space", 32, " ")
            elif c == "\n":
                self.key("Enter", "Enter", 13, "\r")
            else:
                raise ValueError(f"unsupported char {c!r}")

    def screenshot(self, path):
        r = self.cdp.call("Page.captureScreenshot", {"format": "png"}, self.s)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))


def read(path):
    with open(path) as f:
        return f.read()


def start_chromium(binary, extra):
    """Chromium with DevTools on a port of its choosing, its profile in a fresh folder (under $TRUTH_DIR where set,
    which the harness removes): (process, folder, port, the browser's DevTools path). Stopped and removed if it
    does not come up."""
    ud = tempfile.mkdtemp(prefix="tab-chromium-", dir=os.environ.get("TRUTH_DIR") or None)
    cmd = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={ud}", "--remote-debugging-port=0",
           "--window-size=1400,900", *extra, "about:blank"]
    # its own session and process group: chromium and every helper it starts are stopped by its PID
    with open(os.path.join(ud, "chromium.stderr"), "wb") as errlog:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog,
                                start_new_session=True)
    portfile = os.path.join(ud, "DevToolsActivePort")
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited rc={proc.returncode}; see {ud}/chromium.stderr")
            try:
                with open(portfile) as f:
                    lines = f.read().split("\n")
                if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                    return proc, ud, int(lines[0]), lines[1].strip()
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        raise TimeoutError("DevToolsActivePort not written in 30s")
    except BaseException:
        stop_chromium(proc, ud)
        raise


def stop_chromium(proc, ud, cdp=None):
    if cdp is not None:
        try:
            cdp.call("Browser.close", timeout=5)
        except Exception:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)        # pgid == chromium's PID (start_new_session)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5)
            time.sleep(0.5)
        except subprocess.TimeoutExpired:
            continue
    shutil.rmtree(ud, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["idle", "type"])
    ap.add_argument("base", help="e.g. http://127.0.0.1:18080")
    ap.add_argument("folder", help="absolute folder path on the code-server host")
    ap.add_argument("--file", help="file (relative to folder) to open in an editor")
    ap.add_argument("--seconds", type=float, default=10, help="idle time with the tab untouched")
    ap.add_argument("--text", default="typed by cdp", help="letters/digits/spaces to type")
    ap.add_argument("--load-timeout", type=float, default=90)
    ap.add_argument("--background", action="store_true",
                    help="after load, open+activate another tab so this one is hidden (like a background tab)")
    ap.add_argument("--ready-file", help="touch this path once the workbench is loaded")
    ap.add_argument("--screenshot", help="PNG path, taken just before exit")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--chromium-arg", action="append", default=[])
    a = ap.parse_args()
    if a.mode == "type" and not a.file:
        ap.error("type mode needs --file")

    # The harness ends the tab with SIGTERM: through `finally`, so chromium is stopped and its profile removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t0 = time.monotonic()
    proc, ud, port, wspath = start_chromium(a.chromium, a.chromium_arg)
    log(f"chromium pid={proc.pid} devtools port={port}")
    cdp = None
    rc = 1
    try:
        cdp = CDP(WebSocket(f"ws://127.0.0.1:{port}{wspath}"))
        pages = [t for t in cdp.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
        tid = pages[0]["targetId"] if pages else cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sess = cdp.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        tab = Tab(cdp, sess)

        base = a.base.rstrip("/")
        q = {"folder": a.folder}
        if a.file:
            host = urllib.parse.urlparse(base).netloc
            q["payload"] = json.dumps([["openFile",
                                        f"vscode-remote://{host}{os.path.join(a.folder, a.file)}"]])
        url = f"{base}/?{urllib.parse.urlencode(q)}"
        log("navigate", url)
        cdp.call("Page.navigate", {"url": url}, sess)
        tab.wait_for("!!document.querySelector('.monaco-workbench')", a.load_timeout, ".monaco-workbench")
        log(f"workbench present after {time.monotonic() - t0:.1f}s")
        # workbench shell up; now wait until it talks to the server: explorer shows the folder's files
        tab.wait_for("!!document.querySelector('.explorer-folders-view .monaco-list-row')",
                     a.load_timeout, "explorer rows (remote connection)")
        if a.file:
            name = os.path.basename(a.file)
            tab.wait_for(
                "(()=>{const t=document.querySelector('.tabs-container .tab.active');"
                "const e=document.querySelector('.editor-instance .monaco-editor .view-lines');"
                "const label=t&&t.getAttribute('aria-label');"
                f"return !!(label&&label.includes({json.dumps(name)})&&e&&e.innerText.trim().length)}})()",
                a.load_timeout, f"editor with {name}")
        log(f"loaded after {time.monotonic() - t0:.1f}s")
        if a.background:
            other = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            cdp.call("Target.activateTarget", {"targetId": other})
            time.sleep(1)
        log("document.visibilityState={} hasFocus={}".format(
            tab.eval("document.visibilityState"), tab.eval("document.hasFocus()")))
        if a.ready_file:
            with open(a.ready_file, "w") as f:
                f.write(f"{time.time()}\n")

        if a.mode == "idle":
            log(f"leaving tab untouched for {a.seconds}s")
            cdp.drain(a.seconds)
            alive = tab.eval("!!document.querySelector('.monaco-workbench')")
            log("document.visibilityState={}".format(tab.eval("document.visibilityState")))
            log(f"after idle: workbench still present={alive}, cdp events seen={cdp.nevents}")
            rc = 0 if alive else 1
        else:
            path = os.path.join(a.folder, a.file)
            before = read(path)
            # click into the editor text (real mouse event), then Ctrl+End, type, Ctrl+S
            box = tab.eval("(()=>{const r=document.querySelector('.editor-instance .monaco-editor .view-lines')"
                           ".getBoundingClientRect();return [r.x+r.width/2,r.y+5]})()")
            for typ in ("mousePressed", "mouseReleased"):
                cdp.call("Input.dispatchMouseEvent", {"type": typ, "x": box[0], "y": box[1],
                                                      "button": "left", "clickCount": 1}, sess)
            tab.wait_for("document.activeElement && document.activeElement.closest('.monaco-editor') !== null",
                         10, "editor focus")
            tab.key("End", "End", 35, modifiers=2)          # Ctrl+End
            tab.type_text("\n" + a.text)
            try:
                tab.wait_for("!!document.querySelector('.tabs-container .tab.active.dirty')", 10, "dirty tab")
                log("typed; editor is dirty; file on disk unchanged:", read(path) == before)
            except TimeoutError:
                log("WARNING: editor never showed dirty (files.autoSave on?)")
            log("sending Ctrl+S")
            tab.key("s", "KeyS", 83, modifiers=2)           # Ctrl+S
            tab.wait_for("!document.querySelector('.tabs-container .tab.active.dirty')", 15, "tab saved (not dirty)")
            deadline = time.monotonic() + 15
            after = before
            while time.monotonic() < deadline and after == before:
                time.sleep(0.3)
                after = read(path)
            ok = after.rstrip("\n").endswith(a.text)
            log(f"file on disk now: {after!r}  -> {'OK' if ok else 'NOT SAVED'}")
            rc = 0 if ok else 1
            if a.seconds:
                cdp.drain(min(a.seconds, 5))
        if a.screenshot:
            tab.screenshot(a.screenshot)
            log("screenshot", a.screenshot)
    except Exception as e:
        log(f"ERROR: {type(e).__name__}: {e}")
        rc = 1
    finally:
        stop_chromium(proc, ud, cdp)
        if cdp:
            try:
                cdp.ws.close()
            except Exception:
                pass
        log(f"chromium pid={proc.pid} stopped; rc={rc}; total {time.monotonic() - t0:.1f}s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
