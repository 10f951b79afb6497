"""The client side of the CLI: status, request, relay and handoff talk to a running agent."""

import json
import os
import socket
import time

from wr_agent import relay
from wr_agent.state_folder import unsafe_state_folder


class AgentUnreachable(Exception):
    pass


class Connection(object):
    def __init__(self, path, timeout=5.0):
        why = unsafe_state_folder(os.path.dirname(os.path.abspath(path)))
        if why:
            raise AgentUnreachable("refusing the agent's socket %s: %s" % (path, why))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as exc:
            self.sock.close()
            raise AgentUnreachable("no wr-agent answers on %s: %s" % (path, exc.strerror or exc)) from None
        self.buf = b""
        self.hello = self.read_obj()
        if not isinstance(self.hello, dict) or self.hello.get("hello") != "wr-agent":
            raise AgentUnreachable("%s did not greet as wr-agent: %r" % (path, self.hello))

    def read_line(self):
        while b"\n" not in self.buf:
            try:
                data = self.sock.recv(65536)
            except OSError as exc:
                raise AgentUnreachable("reading from the agent failed: %s" % exc) from None
            if not data:
                raise AgentUnreachable("the agent closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def read_obj(self):
        return json.loads(self.read_line().decode("utf-8"))

    def send_line(self, text):
        self.sock.sendall(text.encode("utf-8").rstrip(b"\n") + b"\n")

    def call(self, obj):
        self.send_line(json.dumps(obj))
        return self.reply()

    def reply(self):
        """The next non-event line."""
        for _ in range(10000):
            obj = self.read_obj()
            if not (isinstance(obj, dict) and "event" in obj):
                return obj
        raise AgentUnreachable("no reply among the agent's events")

    def close(self):
        self.sock.close()


def cmd_status(path):
    conn = Connection(path)
    try:
        rep = conn.call({"id": 1, "method": "status"})
    finally:
        conn.close()
    if "result" not in rep:
        raise AgentUnreachable("status failed: %s" % json.dumps(rep))
    print(json.dumps(rep["result"], indent=2, sort_keys=True))
    return 0


def cmd_request(path, text):
    conn = Connection(path)
    try:
        conn.send_line(text)
        line = conn.reply()
    finally:
        conn.close()
    print(json.dumps(line))
    return 0 if isinstance(line, dict) and "result" in line else 1


def cmd_relay(path, drain_seconds=5.0):
    """`relay` (the copy loop lives in relay.py, which the bundle's entry point runs without this module)."""
    try:
        return relay.run(path, drain_seconds)
    except relay.Unreachable as exc:
        raise AgentUnreachable(str(exc)) from None


def cmd_handoff(path, bundle_path, sha256, wait=15.0):
    conn = Connection(path)
    try:
        rep = conn.call({"id": 1, "method": "handoff", "bundle": os.path.abspath(bundle_path),
                         "sha256": sha256.lower()})
    finally:
        conn.close()
    if "result" not in rep:
        print(json.dumps(rep))
        return 1
    deadline = time.monotonic() + wait
    last = None
    while time.monotonic() < deadline:
        try:
            c = Connection(path, timeout=2.0)
            c.close()
            last = c.hello.get("build")
            if last == sha256.lower():
                print(json.dumps({"accepted": True, "build": last}))
                return 0
        except (AgentUnreachable, ValueError):
            pass
        time.sleep(0.1)
    print(json.dumps({"accepted": True, "build": last,
                      "error": "the agent did not come back with build %s within %g s" % (sha256, wait)}))
    return 1
