"""Hostile numbers and files around a real agent: huge integers in the settings file, a request and a
hand-off state; a FIFO where a file belongs; temp files a failed save left behind. Each is reported like
any corrupt input, and the agent starts and answers."""

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest
from agentrun import Agent, agent_env, private_dir, serve_argv, stop, wait_answering

pytestmark = [pytest.mark.integration, pytest.mark.linux(reason="reads /proc (boot id, a process's children)")]

HUGE = "1" + "0" * 400


@pytest.fixture
def sock(tmp_path):
    return os.path.join(private_dir(tmp_path / "run"), "agent.sock")


def quick_agent(sock, *extra):
    """A started agent; one that does not answer (hangs at start) is killed by its PID, not leaked."""
    argv = serve_argv(sock, "--candidates", "user", "--no-heartbeat", "--tick-seconds", "0.2", *extra)
    proc = subprocess.Popen(argv, env=agent_env())
    try:
        wait_answering(sock, proc)
    except BaseException:
        proc.kill()
        proc.wait(timeout=10)
        raise
    return Agent(sock, proc)


def test_a_huge_integer_in_the_settings_file_is_reported_not_fatal(sock):
    with open(sock + ".settings", "w") as f:
        f.write(json.dumps({"ceiling_seconds": int(HUGE), "prompt_timeout_seconds": 600, "ask_at_ceiling": False}))
    a = quick_agent(sock, "--awake-ceiling", "3600")
    try:
        st = a.status()
        assert "ceiling_seconds" in st["settings_error"] and st["ceiling_seconds"] == 3600
        assert len(st["settings_error"]) < 300
    finally:
        a.stop()


def test_a_huge_integer_in_a_settings_request_is_out_of_range(sock):
    a = quick_agent(sock)
    try:
        c = a.client()
        c.send_raw(b'{"id": 1, "method": "settings", "ceiling_seconds": %s, "prompt_timeout_seconds": 600,'
                   b' "ask_at_ceiling": false}\n' % HUGE.encode())
        reply = c.read()
        assert reply["error"]["code"] == "out_of_range", reply
        assert c.call("status")["result"]["ceiling_seconds"] == 4 * 3600  # nothing changed
        c.close()
    finally:
        a.stop()


@pytest.mark.parametrize("state", [
    {"ceiling": {"state": "below", "awake_start": int(HUGE)}, "classifier": {}},
    {"ceiling": [1], "classifier": "x"},
])
def test_a_bad_handoff_state_is_ignored_and_the_agent_runs(sock, state):
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    settings = {"ceiling_seconds": 3600, "prompt_timeout_seconds": 600, "ask_at_ceiling": False}
    # `written` is this boot's monotonic clock now, so the state is fresh and really gets restored.
    body = dict(state, settings=settings, boot_id=boot, written=time.monotonic(), classifier_busy=True,
                published_busy=True)
    with open(sock + ".state", "w") as f:
        f.write(json.dumps(body))
    a = quick_agent(sock)
    try:
        for _ in range(3):
            st = a.status()  # the status answers (a huge awake_start would overflow every tick)
            assert st["stalled"] is False
            time.sleep(0.3)
        assert not os.path.exists(sock + ".state")
    finally:
        a.stop()


@pytest.mark.parametrize("which", [".settings", ".state", ".timeline", ".exclusions"])
def test_a_fifo_where_a_file_belongs_does_not_hang_the_start(sock, which):
    os.mkfifo(sock + which)
    a = quick_agent(sock)  # before: open() of the FIFO waited for a writer for ever
    try:
        st = a.status()
        if which == ".settings":
            assert "not a regular file" in st["settings_error"]
            assert stat.S_ISFIFO(os.lstat(sock + which).st_mode)  # reported, left alone like a corrupt file
        elif which in (".timeline", ".exclusions"):
            c = a.client()
            problem = c.call(which[1:])["result"]["problem"]
            c.close()
            assert "not a regular file" in problem, problem
            # reported like a corrupt file: the record is set aside, the exclusions file left alone
            kept = sock + which + (".corrupt" if which == ".timeline" else "")
            assert stat.S_ISFIFO(os.lstat(kept).st_mode)
    finally:
        a.stop()


def test_temp_files_of_an_interrupted_save_are_removed_at_start(sock):
    leftovers = [sock + ".settings.tmp.12345", sock + ".state.tmp.999"]
    keep = sock + ".settings.tmp.notapid"
    for p in [*leftovers, keep]:
        with open(p, "w") as f:
            f.write("{")
    a = quick_agent(sock)
    try:
        assert not any(os.path.exists(p) for p in leftovers) and os.path.exists(keep)
    finally:
        a.stop()


def test_a_save_that_fails_midway_leaves_no_temp_file(tmp_path):
    """A real write failure: the file-size limit (RLIMIT_FSIZE) makes write() fail like a full disk."""
    target = tmp_path / "agent.sock.settings"
    code = (
        "import resource, signal, sys\n"
        "from wr_agent import settings\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (10, resource.RLIM_INFINITY))\n"
        "try:\n"
        "    settings.save(sys.argv[1], settings.Settings())\n"
        "except OSError as e:\n"
        "    print('failed', e.errno)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(target)], env=agent_env(), capture_output=True,
                       text=True, timeout=30)
    assert r.stdout.startswith("failed"), r.stdout + r.stderr
    assert os.listdir(str(tmp_path)) == []


def test_a_workroom_named_like_an_option_reaches_the_agent_as_a_value(sock):
    """The app starts the agent with ServeOptions.argv: a host named "--log" must stay a name."""
    from workroom.remote.agent_install import ServeOptions

    argv = ServeOptions(workroom="--log", candidates="user", heartbeat=False).argv(sock)
    proc = subprocess.Popen([sys.executable, "-m", "wr_agent", *argv], env=agent_env(), stderr=subprocess.PIPE)
    try:
        wait_answering(sock, proc)
        assert Agent(sock, proc).status()["workroom"] == "--log"
    finally:
        stop(proc)


@pytest.mark.parametrize("case", ["log", "socket_dir"])
def test_start_up_failures_are_said_plainly_never_as_a_traceback(tmp_path, case):
    d = private_dir(tmp_path / "run")
    sock = os.path.join(d, "agent.sock")
    extra = []
    if case == "log":
        extra = ["--log", str(tmp_path / "missing" / "agent.log")]
    else:
        os.mkdir(sock)  # a directory where the socket goes
    r = subprocess.run(serve_argv(sock, "--no-heartbeat", *extra), env=agent_env(), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    expected = "cannot open the log file" if case == "log" else "is in the way (it is not a socket)"
    assert expected in r.stderr


@pytest.mark.parametrize("case", ["serve", "reader", "supervise", "detach"])
def test_a_fifo_as_the_log_file_refuses_the_start_instead_of_hanging(tmp_path, case):
    """Before: opening the FIFO to append waited for a reader for ever, before the lock, saying nothing."""
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    log = sock + ".log"
    os.mkfifo(log)
    extra = {"supervise": ["--supervise"], "detach": ["--supervise", "--detach"]}.get(case, [])
    reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK) if case == "reader" else None  # the open would not block
    proc = subprocess.Popen(serve_argv(sock, "--no-heartbeat", "--log", log, *extra), env=agent_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=10)
    finally:
        kill_tree(proc)  # a start hanging on the FIFO (the supervisor's child, too) is killed by its PID
        if reader is not None:
            os.close(reader)
    assert proc.returncode == 4, (proc.returncode, err)
    assert "Traceback" not in err and f"log file {log} is a FIFO, not a regular file" in err, err
    assert out == ""  # --detach started nothing (it prints the PID of what it starts)
    assert stat.S_ISFIFO(os.lstat(log).st_mode)  # left alone for its owner to look at
    assert not os.path.exists(sock)
    if case == "supervise":
        assert "not restarting" in err  # the supervisor does not retry a log that is not a file


def kill_tree(proc):
    """SIGKILL `proc` and its descendants, each by PID (nothing when it has already exited), and reap it."""
    pids, todo = [], [proc.pid]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        pids.append(pid)
        todo.extend(kids)
    if proc.poll() is None:
        for pid in reversed(pids):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    proc.wait(timeout=10)


def test_a_symlink_to_a_regular_log_file_is_followed(tmp_path):
    """The log follows a symbolic link like the agent's other files do; what it leads to is what is judged."""
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    real = tmp_path / "real.log"
    real.write_text("")
    os.symlink(str(real), sock + ".log")
    a = quick_agent(sock, "--log", sock + ".log")
    try:
        assert "serving " + sock in real.read_text()
    finally:
        a.stop()
