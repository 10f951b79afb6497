"""Run real wr-agent processes for integration tests: plain, or inside a fresh PID+mount+net namespace
(so the candidate set holds only what the test starts), with a small line client."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

AGENT_SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "agent_bundle"))


def agent_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = AGENT_SRC
    for k in ("WORKROOM_AWAKE_CEILING", "WORKROOM_AWAKE_PROMPT_TIMEOUT", "WORKROOM_ASK_AT_AWAKE_CEILING"):
        env.pop(k, None)
    env.update(extra)
    return env


def private_dir(path):
    os.makedirs(str(path), exist_ok=True)
    os.chmod(str(path), 0o700)
    return str(path)


def wait_until(pred, timeout, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise TimeoutError(f"{what} not met within {timeout:g} s (last: {last!r})")


def stop(proc, timeout=5.0):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def send_and_read_all(s, data):
    """Send `data` on connected socket `s`, close our side, and read the answer to its end (each read is
    bounded by the socket's timeout)."""
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out
        out += chunk


class Client:
    """One connection: reads the hello, then requests and events as dicts."""

    def __init__(self, path, timeout=5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.events = []
        self.hello = self.read()

    def read(self, timeout=None):
        if timeout is not None:
            self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("agent closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send_raw(self, data):
        self.sock.sendall(data)

    def call(self, method, **params):
        req = dict(params, id=method + "-1", method=method)
        self.send_raw(json.dumps(req).encode() + b"\n")
        while True:
            obj = self.read()
            if "event" in obj:
                self.events.append(obj)
                continue
            return obj

    def next_event(self, timeout):
        if self.events:
            return self.events.pop(0)
        try:
            return self.read(timeout)
        except TimeoutError:
            return None

    def close(self):
        self.sock.close()


class Agent:
    """A serve process and its socket."""

    def __init__(self, sock, proc):
        self.sock, self.proc = sock, proc

    def client(self):
        return Client(self.sock)

    def status(self):
        c = self.client()
        try:
            return c.call("status")["result"]
        finally:
            c.close()

    def wait_status(self, pred, timeout, what="status"):
        def check():
            st = self.status()
            return st if pred(st) else None
        return wait_until(check, timeout, 0.05, what)

    def stop(self):
        stop(self.proc)


def wait_answering(sock, proc, timeout=10.0):
    def up():
        if proc.poll() is not None:
            raise RuntimeError(f"agent exited with {proc.returncode}")
        try:
            Client(sock, 1.0).close()
            return True
        except OSError:
            return False
    wait_until(up, timeout, 0.05, f"agent answering on {sock}")


def serve_argv(sock, *extra):
    return [sys.executable, "-m", "wr_agent", "serve", "--socket", sock, *list(extra)]


def start_agent(sock, *extra, popen=subprocess.Popen, env=None, **kw):
    proc = popen(serve_argv(sock, *extra), env=env or agent_env(), **kw)
    wait_answering(sock, proc)
    return Agent(sock, proc)


class PidNamespace:
    """A fresh PID + mount + network namespace (own /proc, own /dev/pts, only a down lo). Root only.

    PID 1 inside is a `sleep`; processes started with `popen` join it through nsenter. Killing PID 1
    at close takes everything inside down with it.
    """

    SETUP = "mount -t devpts -o newinstance devpts /dev/pts 2>/dev/null; ip link set lo up; exec sleep 3600"

    def __init__(self, netns=None):
        """`netns`: run inside that named network namespace (a netns_box) instead of a new empty one."""
        prefix = ["ip", "netns", "exec", netns] if netns else []
        net = [] if netns else ["--net"]
        self.unshare = subprocess.Popen([*prefix, "unshare", "--pid", "--fork", "--mount-proc", *net,
                                         "sh", "-c", self.SETUP])
        self.inner = wait_until(self._child, 5.0, 0.02, "namespace init")
        self.procs = []

    def _child(self):
        try:
            kids = [str(k) for k in self._descendants(self.unshare.pid)]
        except OSError:
            return None
        kids = [k for k in kids if self._comm(k) == "sleep"]
        if not kids:
            return None
        return int(kids[0])

    @staticmethod
    def _comm(pid):
        try:
            with open(f"/proc/{pid}/comm") as f:
                return f.read().strip()
        except OSError:
            return None

    def argv(self, *argv):
        return ["nsenter", "--target", str(self.inner), "--pid", "--mount", "--net", "--", *list(argv)]

    def popen(self, argv, **kw):
        proc = subprocess.Popen(self.argv(*argv), **kw)
        self.procs.append(proc)
        return proc

    @staticmethod
    def _descendants(pid):
        out = []
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            return out
        for k in kids:
            out.append(k)
            out.extend(PidNamespace._descendants(k))
        return out

    def kill(self, proc):
        """Kill a process started with popen and everything it started inside (by PID), and reap it."""
        for pid in reversed(self._descendants(proc.pid)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        try:
            os.kill(self.inner, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for p in [*self.procs, self.unshare]:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


# -- running code as another user --------------------------------------------------------------------------
# Such code must not read the checkout (it may sit in a 0700 home): tests copy what it needs into a folder
# made for it, and run it with an interpreter that user can execute.
NOBODY = 65534


def as_nobody(argv):
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


def python_for_nobody():
    """An interpreter (>= 3.8) that `nobody` can run, or None."""
    for py in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            r = subprocess.run(as_nobody([py, "-c", "import sys; assert sys.version_info >= (3, 8)"]),
                               capture_output=True, timeout=30, cwd="/")
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0:
            return py
    return None


def folder_for_nobody():
    """A fresh folder under /tmp that `nobody` owns (0700), inside one it may traverse (0711); the caller
    removes the outer folder (returned first)."""
    outer = tempfile.mkdtemp(prefix=f"wr-nobody-{os.getpid()}-")
    os.chmod(outer, 0o711)
    inner = os.path.join(outer, "home")
    os.mkdir(inner, 0o700)
    os.chown(inner, NOBODY, NOBODY)
    return outer, inner
