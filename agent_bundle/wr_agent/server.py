"""The Unix-socket server (the service thread): newline-delimited JSON, one object a line.

Single-threaded over selectors, non-blocking per client: one client's garbage, flood or hang-up costs
that client its connection and nothing else; the tick runs on its own thread and is never waited on.
"""

import json
import os
import re
import selectors
import socket
import struct
import sys
import time

from wr_agent import PROTOCOL, VERSION, bundle
from wr_agent.agent import visible
from wr_agent.agent_key import agent_key, is_hex, proof_of
from wr_agent.agent_log import log
from wr_agent.select_loop import SelectLoop
from wr_agent.settings import SettingsError

MAX_LINE = 65536
MAX_CLIENTS = 64
MAX_OUT = 1 << 20
SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def _peercred(sock):
    """(pid, uid, gid) of the connecting process from SO_PEERCRED (Linux), or None where there is none."""
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None
    return struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i")))


def peer_uid(sock):
    """The connecting process's uid (SO_PEERCRED on Linux, LOCAL_PEERCRED on BSD/macOS), or None."""
    cred = _peercred(sock)
    if cred is not None:
        return cred[1]
    if sys.platform == "darwin":
        raw = sock.getsockopt(0, 0x001, struct.calcsize("IIh16I") + 8)  # SOL_LOCAL, LOCAL_PEERCRED: xucred
        return struct.unpack_from("II", raw)[1]
    return None


def peer_pid(sock):
    """The connecting process's pid as this namespace sees it (Linux), or None."""
    try:
        cred = _peercred(sock)
    except (OSError, struct.error):
        return None
    return None if cred is None else cred[0]


# The app over SSH: our `relay` (it names itself so), or sshd itself when the app opens a stream straight to
# this socket (OpenSSH's streamlocal forwarding; sshd's per-connection process is `sshd`, or `sshd-session`
# from OpenSSH 9.8). Only the socket's owner can connect either way (docs/protocol.md, transport).
RELAY_COMMS = frozenset(("wr-agent-relay", "sshd", "sshd-session"))


def _comm(pid):
    """A process's command name, or "" when it cannot be read."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except (OSError, ValueError):
        return ""


def _peer_is_relay(sock):
    """Whether the peer carries the app over SSH (RELAY_COMMS), by its pid's comm."""
    pid = peer_pid(sock)
    return pid is not None and _comm(pid) in RELAY_COMMS


def encode(obj):
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"


class RequestError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code, self.message = code, message


class _Client(object):
    __slots__ = ("closing", "inbuf", "last_visible", "outbuf", "prompt_seq", "relay", "sock", "subscribed")

    def __init__(self, sock, relay=False):
        self.sock = sock
        self.relay = relay  # our own `relay` (the app over SSH): its traffic is not the box's work
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.subscribed = False
        self.last_visible = None
        self.prompt_seq = 0
        self.closing = False


class Server(SelectLoop):
    def __init__(self, agent, listen_sock, handoff=None):
        SelectLoop.__init__(self, listen_sock, time.monotonic, "agent socket")
        self.agent = agent
        self.handoff = handoff  # callable(bundle_path): re-executes; returns only on failure
        self.uid = os.getuid()
        self.sock_path = listen_sock.getsockname()  # where its key is (SOCKET.key: wr_agent/agent_key.py)
        self.pending_handoff = None
        self.listening = False  # some client is subscribed: a tick may have something to push to it
        agent.on_tick = self._ticked

    def _ticked(self):
        """After each tick (the tick's thread): wake the loop only when someone listens for what changed."""
        if self.listening:
            self.wake()

    def run(self, stop):
        while not stop.is_set():
            # Nobody subscribed: nothing to push, so no tick's wake and no timeout (a client's bytes, a stop or a
            # hand-off wake it). Someone subscribed: at least once a second too, so a stalled tick is still said.
            self.listening = any(c.subscribed for c in self.clients)
            self.select_once(1.0 if self.listening else None)
            try:
                self._push_changes()
            except Exception:  # never let an event bug take the server down
                log.exception("pushing events failed")
            if self.pending_handoff is not None:
                self._do_handoff()

    # -- connections -----------------------------------------------------------------------------------------
    def _accept(self):
        for sock in self._gate.accept():
            try:
                uid = peer_uid(sock)
            except OSError:
                uid = -1
            if uid != self.uid:  # unknown (a platform without peer credentials) is refused too
                try:
                    sock.send(encode({"id": None, "error": {"code": "forbidden",
                                                           "message": "peer uid %s is not the agent's" % uid}}))
                except OSError:
                    pass
                sock.close()
                continue
            if len(self.clients) >= MAX_CLIENTS:
                # Full: make room by dropping the oldest client that has not subscribed (a flood of idle
                # connections must not lock out the app, whose connection is subscribed).
                victim = next((old for old in self.clients if not old.subscribed), None)
                if victim is None:
                    sock.close()
                    continue
                self._drop(victim)
            c = _Client(sock, relay=_peer_is_relay(sock))
            self._add(c)
            self._send(c, {"hello": "wr-agent", "protocol": PROTOCOL, "version": VERSION,
                           "build": self.agent.build})

    def _service(self, c, mask):
        if mask & selectors.EVENT_WRITE:
            self._flush(c)
        if mask & selectors.EVENT_READ and c.sock.fileno() >= 0:
            try:
                data = c.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._drop(c)
                return
            if c.closing:
                return  # answered "too_large" and closing: nothing it sends now is read (memory stays bounded)
            c.inbuf += data
            if c.relay:
                self.agent.count_relay_traffic(len(data), data.count(b"\n"))
            while c.sock.fileno() >= 0 and not c.closing:
                nl = c.inbuf.find(b"\n")
                if nl < 0:
                    if len(c.inbuf) > MAX_LINE:
                        self._too_large(c)
                    break
                line = bytes(c.inbuf[:nl])
                del c.inbuf[:nl + 1]
                if len(line) > MAX_LINE:
                    self._too_large(c)
                    break
                self._handle_line(c, line)

    def _too_large(self, c):
        c.inbuf = bytearray()
        self._send(c, {"id": None, "error": {"code": "too_large",
                                            "message": "line longer than %d bytes" % MAX_LINE}})
        c.closing = True
        self._flush(c)

    def _send(self, c, obj):
        if c.sock.fileno() < 0:
            return
        c.outbuf += encode(obj)
        if len(c.outbuf) > MAX_OUT:
            log.warning("dropping a client that does not read (%d bytes queued)", len(c.outbuf))
            self._drop(c)
            return
        self._flush(c)

    def _flush(self, c):
        if c.sock.fileno() < 0:
            return
        try:
            while c.outbuf:
                n = c.sock.send(c.outbuf)
                if c.relay:
                    self.agent.count_relay_traffic(n, c.outbuf.count(b"\n", 0, n))
                del c.outbuf[:n]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._drop(c)
            return
        if c.closing and not c.outbuf:
            self._drop(c)
            return
        # Closing: only the queued answers go out; what it still sends is left unread (bounded by the kernel).
        want = (0 if c.closing else selectors.EVENT_READ) | (selectors.EVENT_WRITE if c.outbuf else 0)
        try:
            self.sel.modify(c.sock, want, c)
        except (KeyError, ValueError):
            pass

    # -- requests --------------------------------------------------------------------------------------------
    def _handle_line(self, c, line):
        line = line.rstrip(b"\r")
        if not line.strip():
            return
        rid = None
        try:
            try:
                req = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                raise RequestError("invalid", "not a JSON object line (UTF-8)") from None
            if not isinstance(req, dict):
                raise RequestError("invalid", "a request must be a JSON object")
            rid = req.get("id")
            if isinstance(rid, bool) or not isinstance(rid, (int, str)) or (
                    isinstance(rid, str) and len(rid) > 200):
                rid = None
                raise RequestError("invalid", "id must be an integer or a short string")
            method = req.get("method")
            if not isinstance(method, str):
                raise RequestError("invalid", "method must be a string")
            result = self._dispatch(c, method, req)
            self._send(c, {"id": rid, "result": result})
        except RequestError as exc:
            self._send(c, {"id": rid, "error": {"code": exc.code, "message": exc.message}})
        except SettingsError as exc:
            self._send(c, {"id": rid, "error": {"code": exc.code, "message": exc.message}})
        except Exception as exc:  # a bug in one request must not take the server down
            log.exception("request failed")
            self._send(c, {"id": rid, "error": {"code": "failed", "message": "internal error: %s" % exc}})

    def _dispatch(self, c, method, req):
        handler = METHODS.get(method)
        if handler is None:
            raise RequestError("unsupported", "unknown method %r" % method[:64])
        return handler(self, c, req)

    # -- one handler per method (METHODS below is the registry; docs/protocol.md lists them) ---------------
    def _status(self, c, req):
        return self.agent.status()

    def _ping(self, c, req):
        return {"monotonic": self.agent.clock()}

    def _subscribe(self, c, req):
        # A subscriber is the app: on this computer directly, on a box through our relay. Neither is
        # work, even if the sampler first saw the relay before it named itself (docs/agent.md).
        challenge = req.get("challenge")
        proof = None
        if challenge is not None:  # the app asks who we are: the key's answer rides on this reply
            if not is_hex(challenge):
                raise RequestError("invalid", "challenge must be 64 hex digits")
            try:
                key = agent_key(self.sock_path)
            except OSError as exc:
                key, why = None, exc.strerror or str(exc)
            else:
                why = "it could not be read"
            if key is None:
                raise RequestError("failed", "the agent has no key to prove who it is: %s" % why)
            proof = proof_of(key, challenge)
        agent = self.agent
        pid = peer_pid(c.sock)
        agent.exclude_client(pid)
        if pid:
            agent.claim_flow(pid, _comm(pid))
        st = agent.status()
        c.subscribed = True
        c.last_visible = visible(st)
        c.prompt_seq = agent.ceiling.prompt_seq
        return st if proof is None else dict(st, proof=proof)

    def _keep(self, c, req):
        return self.agent.keep()

    def _let_sleep(self, c, req):
        return self.agent.let_sleep()

    def _settings(self, c, req):
        return self.agent.apply_settings(req)

    def _handoff(self, c, req):
        return self._handoff_request(req)

    def _timeline(self, c, req):
        since = req.get("since")
        if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float))
                                  or since != since or abs(since) > 1e12):
            raise RequestError("invalid", "since must be a number of Unix seconds")
        return self.agent.timeline.query(since)

    def _exclusions(self, c, req):
        agent = self.agent
        if "add" in req or "remove" in req:
            if "names" in req:
                raise RequestError("invalid", "names replaces the list: not with add or remove")
            return agent.change_exclusions(req.get("add", []), req.get("remove", []))
        return agent.exclusions() if "names" not in req else agent.set_exclusions(req["names"])

    def _handoff_request(self, req):
        path, sha = req.get("bundle"), req.get("sha256")
        if not isinstance(path, str) or not path or "\0" in path:
            raise RequestError("invalid", "bundle must be a path")
        if not isinstance(sha, str) or not SHA_RE.match(sha.lower()):
            raise RequestError("invalid", "sha256 must be 64 hex digits")
        if self.handoff is None:
            raise RequestError("unsupported", "this agent cannot hand off")
        try:
            actual = bundle.sha256_file(path)
        except (OSError, ValueError) as exc:
            raise RequestError("failed", "cannot read bundle %s: %s" % (path, exc)) from None
        if actual != sha.lower():
            raise RequestError("failed", "bundle %s has sha256 %s, not %s" % (path, actual, sha.lower()))
        import zipfile  # only for a hand-off: a serving agent does not keep zipfile's imports (about 1 MB)

        if not zipfile.is_zipfile(path):
            raise RequestError("failed", "bundle %s is not a zipapp" % path)
        self.pending_handoff = (os.path.abspath(path), sha.lower())
        return {"accepted": True}

    def _do_handoff(self):
        (path, sha), self.pending_handoff = self.pending_handoff, None
        for c in list(self.clients):  # let the "accepted" replies out first (bounded)
            if c.outbuf and c.sock.fileno() >= 0:
                try:
                    c.sock.settimeout(1.0)
                    c.sock.sendall(bytes(c.outbuf))
                    del c.outbuf[:]  # sent: a failed hand-off must not send these replies twice
                except OSError:
                    self._drop(c)  # part of a line may be out: the stream is no longer whole
        try:
            self.handoff(path, sha)
        except Exception:
            log.exception("hand-off to %s failed; carrying on", path)
            for c in list(self.clients):
                try:
                    c.sock.setblocking(False)  # back to the event loop's non-blocking sockets
                except OSError:
                    pass

    # -- events ----------------------------------------------------------------------------------------------
    def _push_changes(self):
        subs = [c for c in self.clients if c.subscribed]
        if not subs:
            return
        st = self.agent.status()
        vis = visible(st)
        seq = self.agent.ceiling.prompt_seq
        prompt = None
        for c in subs:
            if c.last_visible != vis:
                c.last_visible = vis
                self._send(c, {"event": "status", "status": st})
            if c.prompt_seq != seq:
                c.prompt_seq = seq
                if self.agent.ceiling.prompt_pending:
                    prompt = prompt or self.agent.prompt_event()
                    self._send(c, prompt)


METHODS = {
    "status": Server._status,
    "ping": Server._ping,
    "subscribe": Server._subscribe,
    "keep": Server._keep,
    "let_sleep": Server._let_sleep,
    "settings": Server._settings,
    "handoff": Server._handoff,
    "timeline": Server._timeline,
    "exclusions": Server._exclusions,
}
"""The protocol's methods: name -> handler(server, client, request). Adding a method is a row here and its
handler (and the app's `Method` row; tests/integration/test_protocol_contract.py calls every one)."""
