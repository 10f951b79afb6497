"""Only the sockets that moved, read again one by one (HostSignals._tcp_moved_only), against the kernel: in a
network namespace of the test's own (`unshare -n`), one connection pinging among fifty idle ones. The real sock_diag
reader is used, its reads and lookups counted; the namespace's segment counters and the sockets' own are the
kernel's. Each check fails without the rule it names: a tick that would read the whole table, or a change elsewhere
that the narrow read would miss."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.linux(reason="sock_diag and unshare")]

AGENT = Path(__file__).resolve().parents[3] / "agent_bundle"

SCENARIO = r"""
import json, os, socket, subprocess, time
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
from wr_agent import host_signals, proc_sampler, tcp_diag

class Counted(tcp_diag.NetlinkReader):
    reads = lookups = 0
    refuse = False
    def read(self):
        Counted.reads += 1
        return super().read()
    def lookup(self, conns):
        Counted.lookups += 1
        if Counted.refuse:
            raise OSError(5, "refused by the test")  # whatever a lookup meets, the tick is not lost
        return super().lookup(conns)

srv = socket.create_server(("127.0.0.1", 0), backlog=64)
pairs = []
for _ in range(51):
    c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()
    c.sendall(b"hi"); a.recv(2); a.sendall(b"ok"); c.recv(2)
    pairs.append((c, a))
chat_c, chat_a = pairs[0]
s = proc_sampler.ProcSampler(tcp_reader=Counted())
out = {"tracks": [], "reads": [], "lookups": []}

def tick(before=None):
    time.sleep(0.25)
    if before:
        before()
        time.sleep(0.05)
    s._net_bytes()
    s._tcp(s.clock())
    out["tracks"].append(len(s.tcp_judge.tracks))
    out["reads"].append(Counted.reads)
    out["lookups"].append(Counted.lookups)

def ping():
    chat_c.sendall(b"p"); chat_a.recv(1); chat_a.sendall(b"p"); chat_c.recv(1)

Counted.reads = 0
for _ in range(6):
    tick(ping)                       # 0-5: the chatty pair only
quiet_c, quiet_a = pairs[7]
ino = os.fstat(quiet_c.fileno()).st_ino
before = s.tcp_judge.tracks[ino].bytes_out
tick(lambda: (ping(), quiet_c.sendall(b"QUERY\n")))   # 6: a request on an idle connection, beside the ping
out["query_seen"] = s.tcp_judge.tracks[ino].bytes_out - before
new = []
tick(lambda: (ping(), new.append(socket.create_connection(srv.getsockname()))))  # 7: a connection opens
for _ in range(3):
    tick(ping)                       # 8-10: back to the chatty pair
s.tcp_full_at -= host_signals.FULL_EVERY
tick(ping)                           # 11: the whole table at least every FULL_EVERY
tick(ping)                           # 12: the pair alone again
Counted.refuse = True
tick(ping)                           # 13: a lookup that fails: the whole table
print(json.dumps(out))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root: a network namespace")
def test_one_chatty_connection_is_read_alone_and_anything_else_reads_every_socket():
    run = subprocess.run(["unshare", "-n", sys.executable, "-c", SCENARIO], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(AGENT)})
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    reads, lookups, tracks = out["reads"], out["lookups"], out["tracks"]
    # The first ticks read the table (every socket is new to the judge, then all of them moved since the read before).
    assert reads[1] >= 1
    # Then the chatty pair alone: looked up one by one, every socket still known to the judge.
    assert reads[5] == reads[3] and lookups[5] - lookups[3] == 2, out
    assert tracks[5] == tracks[0] == 102  # 51 pairs, both ends (the listener is not tracked)
    # A request on an idle connection moves segments the pair does not account for: the whole table, that tick.
    assert reads[6] == reads[5] + 1 and out["query_seen"] == 6, out
    # A new connection (the namespace's established count changed): the whole table, that tick.
    assert reads[7] == reads[6] + 1 and tracks[7] == 103, out  # its server end not accepted yet: no inode
    assert reads[10] == reads[8], out
    assert reads[11] == reads[10] + 1, out
    assert reads[12] == reads[11] and reads[13] == reads[12] + 1 and tracks[13] == 103, out
