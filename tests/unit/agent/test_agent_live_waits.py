"""Two waits on the real kernel, read by the real sampler from this machine's /proc: a client whose wait wakes on
a timer (curl's poll, every second) while the answer it asked for has not come, and a job step that paces its
output with sleeps. Each a step its shell waits for, as in a script."""

import os
import shutil
import socket
import subprocess
import threading
import time

import pytest
from wr_agent.host_signals import SLOW_WALK
from wr_agent.job_wait import WAIT_MIN
from wr_agent.proc_sampler import ProcSampler

pytestmark = [pytest.mark.unit,
              pytest.mark.linux(reason="reads this machine's /proc and sock_diag")]

TICKS = 6  # one a second: the sampler's cadence


def _votes(s, pids, field, ticks=TICKS, until=None):
    """The ticks (0-based) on which one of `pids` voted in `field` of the signals, over `ticks` one-second ticks."""
    seen = []
    for n in range(ticks):
        sig = s.sample()
        if any(str(v[1]) in pids for v in getattr(sig, field)):
            seen.append(n)
        if until is not None and until():
            break
        time.sleep(1.0)
    return seen


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[1]
    except (OSError, IndexError):
        return None


def only_the_job(s, root_pid):
    """This machine is no box of its own here: CI runs its other tiers beside this test, and on a tick where any
    process votes CPU the sampler does not look at waits at all (the verdict is BUSY by that vote). So the sampler
    sees only the job's own process tree, as on a box where only this job runs. That includes PID 1's reaped CPU:
    here it is every orphan of CI's other tiers that ends (a vote as `process_api` or `init`, which skipped a tick's
    look at waits: the one-tick gaps once seen in CI), on a box of its own it is the box's own work."""
    original = s._new
    s._reaped = lambda now, sig: None

    def new(pid, now, depth=0):
        p = original(pid, now, depth)
        if p is not None:
            q = pid
            for _ in range(64):
                if q is None or q in ("0", "1") or q == str(root_pid):
                    break
                q = _parent(q)
            if q != str(root_pid):
                p.excluded = True
        return p

    s._new = new
    return s


def _comm(pid):
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return set(out.split())

def _stop(release, sampler, sh, srv):
    release.set()
    sampler.close()
    if sh.poll() is None:
        sh.kill()
        sh.wait()
    srv.close()


def _report_server(addr):
    """A server that sends a report's headers at once (`asked` set) and its body when `release` is set."""
    srv = socket.create_server((addr, 0))
    release, asked = threading.Event(), threading.Event()

    def serve():
        conn, _ = srv.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\n")
            asked.set()
            release.wait(30)
            conn.sendall(b"report done\n")

    threading.Thread(target=serve, daemon=True).start()
    return srv, release, asked


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize("box", ["quiet", "busy"])
def test_curl_waiting_for_a_body_after_the_headers_came_is_a_wait_through_its_poll_wakes(tmp_path, box):
    """A server that sends the status line and headers at once and the body only when the report is ready: curl
    has what it asked for only in part, and waits in poll() with a 1 s timeout (its timers), waking every second
    for about 0.1 ms. The wait goes on through those wakes: a TCP wait of the step its shell waits for, voted
    `tcp: curl` until the body comes. On a quiet box the sampler may skip reading curl for a tick or two (nothing
    on the box ran enough to vote); on a busy one ("busy": every process read every tick, as where other work
    runs) each of its wakes is seen, and before this rule none of its blocks lasted the 2 s a wait needs.

    The bound is counted from the headers' sending, when curl's wait begins (its start, loading its libraries and
    connecting, may take a second under CI's other tiers): a quiet box sees the wait within SLOW_WALK + WAIT_MIN
    (docs/agent.md), a busy one within WAIT_MIN and a tick."""
    srv, release, headers_sent = _report_server("127.0.0.1")
    port = srv.getsockname()[1]
    sh = subprocess.Popen(["sh", "-c", 'curl -sS -o "$1" "http://127.0.0.1:$2/report"; echo fetched',
                           "sh", str(tmp_path / "report.txt"), str(port)], stdout=subprocess.PIPE)
    s = only_the_job(ProcSampler(), sh.pid)
    if box == "busy":
        s._system_quiet = lambda now: False
    try:
        deadline = time.monotonic() + 10
        while not _children(sh.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        curl = _children(sh.pid)
        assert curl, "curl did not start"
        assert headers_sent.wait(10), "curl did not ask"
        bound = int(WAIT_MIN + (SLOW_WALK if box == "quiet" else 1.0))
        seen = _votes(s, curl, "tcp", ticks=bound + 2)
        assert seen and seen[0] <= bound and seen == list(range(seen[0], bound + 2)), seen  # then every tick
        release.set()
        assert sh.communicate(timeout=10)[0] == b"fetched\n"
        assert (tmp_path / "report.txt").read_bytes() == b"report done\n"
        assert _votes(s, curl, "tcp", ticks=2) == []
    finally:
        _stop(release, s, sh, srv)


PRODUCER = """import sys, time
for page in range(int(sys.argv[1])):
    if sys.argv[2] == 'write':
        sys.stdout.write('{"page": %d}\\n' % page * 50)
        sys.stdout.flush()
    time.sleep(1)
"""


@pytest.mark.parametrize("writes", [True, False], ids=["writes-each-wake", "writes-nothing"])
def test_a_producer_pacing_its_pages_into_a_pipe_is_work_and_one_that_writes_nothing_is_a_heartbeat(
        tmp_path, writes):
    """`producer | gzip > export.gz` under a shell that waits: the producer sleeps 1 s between pages (an API's
    rate limit), each wake writing its page into the pipe. By its sleeps alone it is a heartbeat; by what its wakes
    write it paces a job's output: voted `sleep` from its second wake on. The same loop writing nothing (a poller
    that finds nothing new) never is."""
    script = tmp_path / "producer.py"
    script.write_text(PRODUCER)
    sh = subprocess.Popen(["sh", "-c", 'python3 -I "$1" 20 "$2" | gzip -c > "$3"', "sh", str(script),
                           "write" if writes else "quiet", str(tmp_path / "export.gz")])
    s = only_the_job(ProcSampler(), sh.pid)
    try:
        deadline = time.monotonic() + 10
        producer = set()
        while time.monotonic() < deadline and not producer:
            producer = set(p for p in _children(sh.pid) if _comm(p).startswith("python"))
            time.sleep(0.05)
        assert producer, "the producer did not start"
        seen = _votes(s, producer, "paced")
        if writes:
            assert seen and seen[0] <= 4 and len(seen) >= TICKS - seen[0] - 1, seen
        else:
            assert seen == []
    finally:
        s.close()
        subprocess.run(["pkill", "-P", str(sh.pid)], check=False)
        sh.kill()
        sh.wait()




@pytest.mark.root
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_step_in_another_network_namespace_waiting_on_its_request_is_a_wait(tmp_path, netns_box):
    """A job step in a container's network namespace (here a box with its own namespace and a veth to this one, as
    docker and a pod have): `curl` asks a server outside for a report and waits for its body. sock_diag answers
    only for the agent's own namespace, so before the box's own socket table was read (`/proc/PID/net/tcp`,
    netns_tcp) the wait had no vote at all and the job read IDLE; now it is `tcp: curl` with the peer, as on the
    box's own network, and ends with the answer.

    Once in CI (beside the other tiers) one tick between two votes had none ([3, 5]): this machine's PID 1 reaping
    another tier's orphans voted CPU that tick, and a tick with a CPU vote does not look at waits (`only_the_job`
    now leaves PID 1 out). A red run says what the sampler saw of curl and its shell on each tick."""
    srv, release, asked = _report_server(netns_box.host_addr)
    port = srv.getsockname()[1]
    sh = netns_box.popen("sh", "-c", 'curl -sS -o "$1" "http://$2:$3/report"; echo fetched', "sh",
                         str(tmp_path / "report.txt"), netns_box.host_addr, str(port), stdout=subprocess.PIPE)
    s = only_the_job(ProcSampler(), sh.pid)
    s._system_quiet = lambda now: False
    try:
        assert asked.wait(10), "curl did not ask"
        curl = _children(sh.pid)
        assert curl and {_comm(p) for p in curl} == {"curl"}
        assert os.stat(f"/proc/{next(iter(curl))}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
        seen, facts, saw = [], [], []
        for n in range(6):
            sig = s.sample()
            mine = [t for t in sig.tcp if str(t[1]) in curl]
            if mine:
                seen.append(n)
                facts.append(mine[0][2])
            step, shell = s.procs.get(next(iter(curl))), s.procs.get(str(sh.pid))
            saw.append((n, sig.cpu, sig.dstate, [t[:2] for t in sig.tcp],
                        None if step is None else (step.state, step.ran_at, step.block_from),
                        None if shell is None else shell.ran_at))
            time.sleep(1.0)
        assert seen and seen[0] <= 3 and seen == list(range(seen[0], 6)), (seen, saw)
        assert facts[-1]["peer"] == netns_box.host_addr and facts[-1]["port"] == port
        release.set()
        assert sh.communicate(timeout=10)[0] == b"fetched\n"
        assert _votes(s, curl, "tcp", ticks=2) == []
    finally:
        _stop(release, s, sh, srv)


@pytest.mark.root
def test_a_server_step_in_another_network_namespace_waiting_for_its_client_is_no_wait(netns_box):
    """The other way round, in the same kind of namespace: a step that is a server (it accepted a connection and
    waits for the client to speak) has asked nothing; its table says the connection was accepted (a fixed local port
    below the ephemeral range, the client's inside it: its listener is closed, as `nc -l` closes its own), so it
    never votes, however long it waits."""
    server = ("import socket\n"
              "s = socket.create_server(('0.0.0.0', 7001))\n"
              "print('ready', flush=True)\n"
              "c, _ = s.accept()\n"
              "s.close()\n"  # as `nc -l` does: no listener left to say the connection was accepted
              "c.recv(1)\n")
    sh = netns_box.popen("sh", "-c", 'python3 -c "$1"; echo served', "sh", server, stdout=subprocess.PIPE)
    s = only_the_job(ProcSampler(), sh.pid)
    s._system_quiet = lambda now: False
    client = None
    try:
        assert sh.stdout.readline() == b"ready\n"
        client = socket.create_connection((netns_box.box_addr, 7001), timeout=5)
        step = _children(sh.pid)
        assert step
        assert _votes(s, step, "tcp", ticks=5) == []
    finally:
        if client is not None:
            client.close()
        s.close()
        if sh.poll() is None:
            sh.kill()
            sh.wait()


NS_CLIENT = ("import socket, time\n"
             "for _ in range(50):\n"
             "    try:\n"
             "        c = socket.create_connection(('127.0.0.1', 7002)); break\n"
             "    except OSError:\n"
             "        time.sleep(0.1)\n"
             "c.sendall(b'POP jobs\\n'); c.recv(1)\n")
NS_SERVERS = {
    # A queue worker's server with nothing to give: it read the pop and waits, in its event loop (epoll), for the
    # client to speak again — Redis's way with a BLPOP on an empty queue.
    "listener": ("import selectors, socket\n"
                 "s = socket.create_server(('127.0.0.1', 7002)); c, _ = s.accept(); c.recv(64)\n"
                 "sel = selectors.DefaultSelector(); sel.register(c, selectors.EVENT_READ)\n"
                 "sel.select()\n"),
    # An API's event loop awaiting its database for the request (asyncio's and Node's way): it waits to read the
    # client as a listener does, but it holds a connection it opened to another peer, whom it may have asked for
    # this client. Not known, so the job's wait counts as it did before the turn was asked.
    "awaiting": ("import selectors, socket\n"
                 "db = socket.create_server(('127.0.0.1', 7003)); up = socket.create_connection(('127.0.0.1', 7003))\n"
                 "dbc, _ = db.accept()\n"
                 "s = socket.create_server(('127.0.0.1', 7002)); c, _ = s.accept(); up.sendall(c.recv(64))\n"
                 "sel = selectors.DefaultSelector(); sel.register(c, selectors.EVENT_READ)\n"
                 "sel.register(up, selectors.EVENT_READ); sel.select()\n"),
    # A Go or tokio server: its poller watches the connection edge-triggered for the connection's whole life, so
    # its idle wait says nothing of a request in hand (here read, and handed to a worker that never answers).
    "edge": ("import select, socket\n"
             "s = socket.create_server(('127.0.0.1', 7002)); c, _ = s.accept(); c.recv(64)\n"
             "ep = select.epoll(); ep.register(c.fileno(), select.EPOLLIN | select.EPOLLET); ep.poll()\n"),
    # A database holding the query: it read it and works on it elsewhere (here blocked on a pipe nobody writes,
    # as a backend waits on a lock), reading nothing of the client's meanwhile.
    "query": ("import os, socket\n"
              "s = socket.create_server(('127.0.0.1', 7002)); c, _ = s.accept(); c.recv(64)\n"
              "r, w = os.pipe(); os.read(r, 1)\n"),
}


def _client_step(among, root_pid, also=lambda pid: True):
    """The NS_CLIENT process(es) among `among(root_pid)`, once started (10 s at most)."""
    deadline, step = time.monotonic() + 10, set()
    while not step and time.monotonic() < deadline:
        time.sleep(0.2)
        for pid in among(root_pid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"sendall" in f.read() and also(pid):
                        step.add(pid)
            except OSError:
                continue
    assert step, "the client did not start"
    return step


@pytest.mark.root
@pytest.mark.parametrize("server", sorted(NS_SERVERS))
def test_a_step_in_another_namespace_asking_a_server_beside_it_is_judged_by_whose_turn_it_is(netns_box, server):
    """A container's job that starts its own server and asks it (a database, a queue) in the container's network:
    that namespace's table says who opened the connection but not who spoke last, so the step's wait is judged as a
    Unix one is, by the server's end: a server whose event loop waits to read the client has nothing in hand (a
    worker's pop on an empty queue: no vote, however long); one that read the request and reads nothing of the
    client's now works on it (a vote, from WAIT_MIN on); an event loop waiting to read the client while it holds a
    connection it opened to another peer (awaiting its database for the request), or one that watches the connection
    edge-triggered (Go's netpoller, tokio: registered for the connection's life), is not known, and votes as before.
    Before, all three voted: a container's idle queue worker kept its box up (the held-out
    netns_redis_worker_idle)."""
    sh = netns_box.popen("sh", "-c", 'python3 -c "$1" & python3 -c "$2"; echo asked', "sh", NS_SERVERS[server],
                         NS_CLIENT, stdout=subprocess.PIPE)
    s = only_the_job(ProcSampler(), sh.pid)
    s._system_quiet = lambda now: False
    try:
        step = _client_step(_children, sh.pid)
        time.sleep(0.5)  # connected and asked
        seen = _votes(s, step, "tcp", ticks=6)
        if server == "listener":
            assert seen == [], seen
        else:
            assert seen and seen[0] <= 3 and seen == list(range(seen[0], 6)), seen
    finally:
        s.close()
        subprocess.run(["pkill", "-P", str(sh.pid)], check=False)
        if sh.poll() is None:
            sh.kill()
            sh.wait()


# A person's shell on a terminal (its controlling one) in the namespace, running the client as its foreground job.
AT_A_TERMINAL = ("import os, sys\n"
                 "pid, fd = os.forkpty()\n"
                 "if pid == 0:\n"
                 "    os.execvp('sh', ['sh', '-c', 'python3 -c \"$1\"; true', 'sh', sys.argv[1]])\n"
                 "while True:\n"
                 "    try:\n"
                 "        if not os.read(fd, 1024):\n"
                 "            break\n"
                 "    except OSError:\n"
                 "        break\n"
                 "os.waitpid(pid, 0)\n")


def _descendants(pid):
    found, todo = set(), [str(pid)]
    while todo:
        kids = _children(todo.pop()) - found
        found |= kids
        todo.extend(kids)
    return found


@pytest.mark.root
@pytest.mark.parametrize(("server", "votes"), [("query", True), ("listener", False)])
def test_a_person_at_a_terminal_in_another_namespace_counts_while_the_server_beside_it_holds_the_request(
        netns_box, server, votes):
    """A person's session is judged by its keystrokes, never by its connection, unless the server in the box is known
    to have the request in hand: a query typed at a prompt and running (here in a container's network, the server
    beside it). The Unix rule asked whose turn it was before the terminal; in another namespace the terminal was
    asked first, so a person's running query there had no vote at all. Now the two go in the same order: the server
    holding the query votes, a server waiting for the person's next words does not."""
    sh = netns_box.popen("sh", "-c", 'python3 -c "$1" & python3 -c "$2" "$3"; echo asked', "sh",
                         NS_SERVERS[server], AT_A_TERMINAL, NS_CLIENT, stdout=subprocess.PIPE)
    s = only_the_job(ProcSampler(), sh.pid)
    s._system_quiet = lambda now: False
    try:
        # the client, not the terminal's keeper nor its shell (their arguments carry its code too)
        step = _client_step(_descendants, sh.pid, lambda pid: os.readlink(f"/proc/{pid}/fd/0").startswith("/dev/pts/"))
        time.sleep(0.5)  # connected and asked
        seen = _votes(s, step, "tcp", ticks=6)
        if votes:
            assert seen and seen[0] <= 3 and seen == list(range(seen[0], 6)), seen
        else:
            assert seen == [], seen
    finally:
        s.close()
        for pid in _descendants(sh.pid):
            subprocess.run(["kill", "-9", pid], check=False, capture_output=True)
        if sh.poll() is None:
            sh.kill()
            sh.wait()
