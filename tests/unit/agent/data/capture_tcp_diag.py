"""Capture real sock_diag replies (and /proc/net/tcp{,6}) from this kernel for the parser's unit tests.

    sudo unshare --net python3 tests/unit/agent/data/capture_tcp_diag.py tests/unit/agent/data

Runs in a fresh network namespace (nothing of the host's is captured) and sets up, on loopback:
IPv4 - a request answered ("hello" -> "world!"), a request not answered ("QUERY\\n"), a listener;
IPv6 - a sender whose peer does not read (1 MiB queued), a client that never sent, a listener.
Writes sock_diag_inet.bin / sock_diag_inet6.bin (the raw netlink replies), proc_net_tcp{,6}.txt and
scenario.json (the ports, so the tests can tell the sockets apart).
"""

import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..",
                                "agent_bundle"))
from wr_agent import tcp_diag


def dump(family, seq):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, tcp_diag.NETLINK_SOCK_DIAG)
    s.send(tcp_diag.request(family, seq))
    parts = []
    while True:
        data = s.recv(65536)
        parts.append(data)
        if tcp_diag.parse(data, seq)[1]:
            break
    s.close()
    return b"".join(parts)


def main():
    out = sys.argv[1]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    keep = []
    srv4 = socket.socket(socket.AF_INET)
    srv4.bind(("127.0.0.1", 0))
    srv4.listen(8)
    a = socket.create_connection(srv4.getsockname())
    a_srv, _ = srv4.accept()
    a.sendall(b"hello")
    assert a_srv.recv(16) == b"hello"
    a_srv.sendall(b"world!")
    assert a.recv(16) == b"world!"
    b = socket.create_connection(srv4.getsockname())
    b_srv, _ = srv4.accept()
    b.sendall(b"QUERY\n")
    assert b_srv.recv(16) == b"QUERY\n"
    srv6 = socket.socket(socket.AF_INET6)
    srv6.bind(("::1", 0))
    srv6.listen(8)
    c = socket.create_connection(srv6.getsockname()[:2])
    c_srv, _ = srv6.accept()
    c_srv.setblocking(False)
    sent = 0
    try:
        while sent < 1 << 20:
            sent += c_srv.send(b"x" * 65536)
    except BlockingIOError:
        pass
    d = socket.create_connection(srv6.getsockname()[:2])
    d_srv, _ = srv6.accept()
    keep += [a, a_srv, b, b_srv, c, c_srv, d, d_srv]
    time.sleep(1.2)  # the times in tcp_info are milliseconds ago: let them grow past a second
    with open(os.path.join(out, "sock_diag_inet.bin"), "wb") as f:
        f.write(dump(socket.AF_INET, 1))
    with open(os.path.join(out, "sock_diag_inet6.bin"), "wb") as f:
        f.write(dump(socket.AF_INET6, 2))
    for name in ("tcp", "tcp6"):
        with open("/proc/net/" + name) as src, open(os.path.join(out, f"proc_net_{name}.txt"), "w") as dst:
            dst.write(src.read())
    scenario = {
        "listen4": srv4.getsockname()[1], "listen6": srv6.getsockname()[1],
        "answered_client": a.getsockname()[1], "unanswered_client": b.getsockname()[1],
        "queued_server_peer": c.getsockname()[1], "silent_client": d.getsockname()[1],
        "queued_bytes": sent, "uid": os.getuid(), "kernel": os.uname().release,
        "inodes": {"answered_client": os.fstat(a.fileno()).st_ino,
                   "unanswered_server": os.fstat(b_srv.fileno()).st_ino},
    }
    with open(os.path.join(out, "scenario.json"), "w") as f:
        json.dump(scenario, f, indent=1)
    print(json.dumps(scenario))


if __name__ == "__main__":
    main()
