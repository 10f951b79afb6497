"""The serve process: hello and status contract, one instance, private directory, peer uid, settings
persistence and corrupt settings files."""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest
from agentrun import (
    NOBODY,
    Client,
    agent_env,
    as_nobody,
    folder_for_nobody,
    private_dir,
    python_for_nobody,
    serve_argv,
    start_agent,
    stop,
    wait_until,
)
from wr_agent import bundle

pytestmark = [pytest.mark.integration, pytest.mark.linux(reason="reads /proc (process names)")]

STATUS_FIELDS = {"verdict", "classifier_verdict", "busy_reasons", "structured_reasons", "stalled", "monotonic",
                 "awake_seconds", "ceiling_seconds", "prompt_timeout_seconds", "ask_at_ceiling",
                 "awake_ceiling_exceeded", "prompt_pending", "prompt_deadline", "suppressed", "asserting", "keep_awake",
                 "settings_error", "workroom", "agent", "sampler"}


@pytest.fixture
def sock(tmp_path):
    return os.path.join(private_dir(tmp_path / "run"), "agent.sock")


def test_hello_status_and_files(sock):
    a = start_agent(sock, "--workroom", "w-one", "--no-heartbeat", "--awake-ceiling", "120")
    try:
        c = a.client()
        assert c.hello["hello"] == "wr-agent" and c.hello["protocol"] == 1
        assert len(c.hello["build"]) == 64
        st = c.call("status")["result"]
        assert set(st) >= STATUS_FIELDS
        assert st["workroom"] == "w-one" and st["ceiling_seconds"] == 120 and st["prompt_timeout_seconds"] == 600
        assert st["agent"]["build"] == c.hello["build"] and st["test_min_duration"] is None
        assert c.call("ping")["result"]["monotonic"] >= st["monotonic"]
        assert c.call("nope")["error"]["code"] == "unsupported"
        c.close()
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
        r = subprocess.run([sys.executable, "-m", "wr_agent", "status", "--socket", sock], env=agent_env(),
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and json.loads(r.stdout)["workroom"] == "w-one"
    finally:
        a.stop()
    assert not os.path.exists(sock)


def test_status_with_nothing_answering_fails_clearly(sock):
    r = subprocess.run([sys.executable, "-m", "wr_agent", "status", "--socket", sock], env=agent_env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "no wr-agent answers on" in r.stderr


def test_second_serve_exits_with_a_clear_message(sock):
    a = start_agent(sock, "--no-heartbeat")
    try:
        r = subprocess.run(serve_argv(sock, "--no-heartbeat"), env=agent_env(), capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 3
        assert f"another wr-agent (pid {a.proc.pid}) is already serving" in r.stderr
        assert a.status()["verdict"] in ("BUSY", "IDLE")
    finally:
        a.stop()


def test_refuses_a_directory_open_to_others(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(str(d), 0o755)
    r = subprocess.run(serve_argv(str(d / "a.sock")), env=agent_env(), capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "open to other users" in r.stderr


def test_refuses_a_symlink_in_place_of_its_folder_and_opens_nothing_first(tmp_path):
    """Someone planted a symlink where the agent's folder belongs, pointing at a private folder: lstat
    sees the link (stat would follow it and find nothing wrong)."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    r = subprocess.run(serve_argv(str(link / "a.sock"), "--log", str(link / "a.sock.log")), env=agent_env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert os.listdir(str(real)) == []  # no log, no lock, no socket made through the link


def test_an_open_folder_is_refused_before_the_log_is_opened_in_it(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(str(d), 0o777)
    r = subprocess.run(serve_argv(str(d / "a.sock"), "--log", str(d / "a.sock.log")), env=agent_env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "open to other users" in r.stderr
    assert os.listdir(str(d)) == []


def test_refuses_a_folder_under_one_its_group_can_write_and_opens_nothing_in_it(tmp_path):
    """The folder itself is private, but the one above it is group-writable (umask 002, a shared group): anyone
    in the group could swap the agent's folder whole, so nothing in it is trusted."""
    state = tmp_path / "state"
    d = state / "wr-agent"
    d.mkdir(parents=True, mode=0o700)
    os.chmod(str(d), 0o700)
    os.chmod(str(state), 0o775)
    r = subprocess.run(serve_argv(str(d / "a.sock"), "--log", str(d / "a.sock.log")), env=agent_env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and f"{state} is writable by its group" in r.stderr, r.stderr
    assert os.listdir(str(d)) == []


def test_creates_a_missing_directory_private(tmp_path):
    sock = str(tmp_path / "state" / "wr-agent" / "agent.sock")
    a = start_agent(sock, "--no-heartbeat")
    try:
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
    finally:
        a.stop()


def test_bad_flag_refuses_to_start(sock):
    r = subprocess.run(serve_argv(sock, "--awake-ceiling", "5"), env=agent_env(), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "--awake-ceiling must be between 30" in r.stderr


def test_env_fallbacks_and_test_min_duration(sock):
    env = agent_env(WORKROOM_AWAKE_CEILING="7", WORKROOM_AWAKE_PROMPT_TIMEOUT="90",
                    WORKROOM_ASK_AT_AWAKE_CEILING="1")
    a = start_agent(sock, "--no-heartbeat", "--test-min-duration", "1", env=env)
    try:
        st = a.status()
        assert (st["ceiling_seconds"], st["prompt_timeout_seconds"], st["ask_at_ceiling"]) == (7, 90, True)
        assert st["test_min_duration"] == 1
    finally:
        a.stop()


def test_settings_survive_a_restart_and_win_over_flags(sock):
    a = start_agent(sock, "--no-heartbeat")
    try:
        c = a.client()
        bad = c.call("settings", ceiling_seconds=float("nan"), prompt_timeout_seconds=60, ask_at_ceiling=True)
        assert bad["error"]["code"] == "out_of_range"
        assert not os.path.exists(sock + ".settings")
        ok = c.call("settings", ceiling_seconds=3600, prompt_timeout_seconds=60, ask_at_ceiling=True)
        assert ok["result"]["ceiling_seconds"] == 3600 and ok["result"]["ask_at_ceiling"] is True
        c.close()
        assert stat.S_IMODE(os.stat(sock + ".settings").st_mode) == 0o600
    finally:
        a.stop()
    b = start_agent(sock, "--no-heartbeat", "--awake-ceiling", "100")
    try:
        st = b.status()
        assert (st["ceiling_seconds"], st["prompt_timeout_seconds"], st["ask_at_ceiling"]) == (3600, 60, True)
    finally:
        b.stop()


def test_corrupt_settings_file_is_reported_and_kept_until_a_valid_request(sock):
    with open(sock + ".settings", "w") as f:
        f.write("{broken")
    a = start_agent(sock, "--no-heartbeat", "--awake-ceiling", "100")
    try:
        st = a.status()
        assert st["ceiling_seconds"] == 100 and "corrupt" in st["settings_error"]
        with open(sock + ".settings") as f:
            assert f.read() == "{broken"
        c = a.client()
        res = c.call("settings", ceiling_seconds=200, prompt_timeout_seconds=60, ask_at_ceiling=False)["result"]
        c.close()
        assert res["settings_error"] is None and res["ceiling_seconds"] == 200
        with open(sock + ".settings") as f:
            assert json.load(f)["ceiling_seconds"] == 200
    finally:
        a.stop()


@pytest.mark.root
def test_peer_with_another_uid_is_refused():
    """The agent runs as nobody; root connecting is a different uid and is refused.

    Nothing of the checkout is read as nobody (it may sit in a 0700 home): the agent runs from a zipapp
    copied into a folder made for nobody, with an interpreter nobody can run."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the agent as another user")
    py = python_for_nobody()
    if py is None:
        pytest.skip("no Python 3.8+ that the user nobody can run")
    outer, home = folder_for_nobody()
    try:
        pyz = os.path.join(home, "wr-agent.pyz")
        with open(pyz, "wb") as f:
            f.write(bundle.bundle_bytes())
        os.chown(pyz, NOBODY, NOBODY)
        sock = os.path.join(home, "run", "agent.sock")
        env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        proc = subprocess.Popen(as_nobody([py, pyz, "serve", "--socket", sock, "--no-heartbeat",
                                           "--candidates", "user"]), env=env, cwd="/")
        try:
            def answered():
                if proc.poll() is not None:
                    raise RuntimeError(f"the agent as nobody exited with {proc.returncode}")
                try:
                    return Client(sock, 1.0)
                except (OSError, EOFError):
                    return None
            c = wait_until(answered, 10, 0.1, "agent up as nobody")
            assert c.hello["error"]["code"] == "forbidden"
            with pytest.raises((EOFError, ConnectionError)):
                c.read(2.0)
        finally:
            stop(proc)
    finally:
        shutil.rmtree(outer, ignore_errors=True)


def test_request_and_relay_commands(sock):
    a = start_agent(sock, "--no-heartbeat", "--workroom", "relayed")
    try:
        r = subprocess.run([sys.executable, "-m", "wr_agent", "request", "--socket", sock,
                            '{"id":"x","method":"ping"}'], env=agent_env(), capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 0 and json.loads(r.stdout)["id"] == "x"
        relay = subprocess.run([sys.executable, "-m", "wr_agent", "relay", "--socket", sock], env=agent_env(),
                               input=b'{"id":1,"method":"status"}\n', capture_output=True, timeout=30)
        # stdin closes right after the request: the relay half-closes and still prints the reply.
        lines = [json.loads(x) for x in relay.stdout.splitlines()]
        assert relay.returncode == 0 and lines[0]["hello"] == "wr-agent"
        assert lines[1]["result"]["workroom"] == "relayed"
        p = subprocess.Popen([sys.executable, "-m", "wr_agent", "relay", "--socket", sock], env=agent_env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert json.loads(p.stdout.readline())["hello"] == "wr-agent"
            p.stdin.write(b'{"id":1,"method":"status"}\n')
            p.stdin.flush()
            assert json.loads(p.stdout.readline())["result"]["workroom"] == "relayed"
            with open(f"/proc/{p.pid}/comm") as f:
                assert f.read().strip() == "wr-agent-relay"  # so the agent never counts it as work
        finally:
            p.stdin.close()
            p.wait(timeout=10)
        assert p.returncode == 0
    finally:
        a.stop()
