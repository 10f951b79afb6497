"""A command without the app starts warm (docs/cli.md, "Warm start"; cli/warm.py, cli/warm_server.py): the first
leaves a starter behind, the next runs in the starter's fork, and nothing the person sees differs but the time.

The real `workroom` command as its own process each time, against the real sshd and the real agent; the starter is
the real one, started by the command itself. The tests' other commands run with starters off (tests/conftest.py);
these turn them on for their own homes and end every starter they left by its pid.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from engine_helpers import ssh_host, trust_sshd
from fixtures.procs import stop_process, warm_starters_under
from fixtures.quiet_server import QuietServer
from workroom.cli import warm
from workroom.core.hosts import Host, HostsFile
from workroom.paths import AppPaths
from workroom.storage import save_hosts

pytestmark = [pytest.mark.integration,
              pytest.mark.linux(reason="a starter and its forks are found in /proc (docs/macos.md: a Mac run is owed)")]
ROOT = Path(__file__).resolve().parents[3]


def wait_for(predicate: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"not within {seconds:g} s: {what}"
        time.sleep(0.05)


@pytest.fixture
def warm_env(app_home: AppPaths) -> Iterator[dict[str, str]]:
    """This test's home with starters on; the starter it leaves is ended after it, by pid."""
    env = {k: v for k, v in os.environ.items() if k != warm.ENV_SWITCH}
    env.update(PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", WORKROOM_LOGIN_ENV="0")
    yield env
    for _ in range(50):
        pid = warm.starter_pid(env)
        if pid is None:
            break
        os.kill(pid, signal.SIGTERM)
        time.sleep(0.1)


def workroom(env: dict[str, str], *argv: str, cwd: Path | None = None,
             python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *python, "-m", "workroom.cli", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def said(stderr: str) -> str:
    """A command's stderr without `python -X importtime`'s lines."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("import time:"))


def imported_heavy(stderr: str) -> set[str]:
    """The heavy modules a command's own process imported (`python -X importtime` lines on its stderr)."""
    names = {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    return {n for n in names if n.split(".")[0] in ("paramiko", "pydantic", "asyncio")}


def starter_of(env: dict[str, str]) -> int:
    """The home's starter, once it listens (it holds its lock, with its pid, from its first moment)."""
    wait_for(lambda: warm.starter_pid(env) is not None and warm.starter_listening(env), 60,
             "a starter listening for the home")
    pid = warm.starter_pid(env)
    assert pid is not None
    return pid


def test_the_next_command_starts_warm_and_says_what_it_says_without_the_starter(
        sshd, app_home: AppPaths, warm_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    trust_sshd(app_home, sshd)
    save_hosts(app_home, HostsFile(hosts=(ssh_host(sshd),)))
    cold = workroom(warm_env, "connect", "box1", "--json")
    assert cold.returncode == 0, cold.stderr
    starter = starter_of(warm_env)
    where = Path(warm.folder(warm_env))
    assert stat.S_IMODE(where.stat().st_mode) == 0o700
    assert stat.S_IMODE((where / warm.SOCKET_NAME).stat().st_mode) == 0o600
    assert stat.S_IMODE((where / warm.LOCK_NAME).stat().st_mode) == 0o600

    warm_run = workroom(warm_env, "connect", "box1", "--json", python=("-X", "importtime"))
    assert warm_run.returncode == 0, warm_run.stderr
    assert imported_heavy(warm_run.stderr) == set(), "the command's own process imported the engine's libraries"
    answer, before = json.loads(warm_run.stdout), json.loads(cold.stdout)
    assert answer["connection"] == before["connection"] == "live"
    assert answer.keys() == before.keys() and answer["badge"]["kind"] == before["badge"]["kind"]

    off = dict(warm_env, WORKROOM_WARM="0")
    for argv, code in ((["hosts", "list", "--json"], 0), (["hosts", "list"], 0), (["connect", "nosuch"], 3),
                       (["connect", "nosuch", "--json"], 3), (["settings", "set", "--ceiling", "1"], 7),
                       (["status", "--bogus", "--json"], 2), (["why", "nosuch", "--json"], 3)):
        through, itself = workroom(warm_env, *argv, python=("-X", "importtime")), workroom(off, *argv)
        assert imported_heavy(through.stderr) == set(), argv  # it ran in the fork
        assert (through.returncode, through.stdout, said(through.stderr)) == (
            itself.returncode, itself.stdout, itself.stderr), argv
        assert through.returncode == code, (argv, through.stderr)
    assert warm.starter_pid(warm_env) == starter  # one starter served them all

    status = workroom(warm_env, "app", "status", "--json")
    assert status.returncode == 1 and json.loads(status.stdout)["warm_starter"] == starter
    assert f"a starter (process {starter})" in workroom(warm_env, "app", "status").stdout


def test_the_fork_takes_the_commands_folder_and_environment(
        app_home: AppPaths, warm_env: dict[str, str], tmp_path: Path) -> None:
    """The starter was started from one folder with one HOME; the command is typed in another folder with another
    HOME: `--identity` is read against the command's (a relative path from its folder, `~` from its HOME)."""
    assert workroom(warm_env, "hosts", "list").returncode == 0
    starter = starter_of(warm_env)
    mine, elsewhere = tmp_path / "mine", tmp_path / "elsewhere"
    for folder in (mine / "keys", elsewhere):
        folder.mkdir(parents=True)
    (mine / "keys" / "id_test").write_text("not a real key, only a file\n")
    as_me = dict(warm_env, HOME=str(mine))
    assert workroom(as_me, "hosts", "add", "a", "--provider", "ssh", "--host", "127.0.0.1", "--identity",
                    "~/keys/id_test").returncode == 0
    refused = workroom(dict(warm_env, HOME=str(elsewhere)), "hosts", "add", "b", "--provider", "ssh", "--host",
                       "127.0.0.1", "--identity", "~/keys/id_test")
    assert refused.returncode == 2 and "No such key file" in refused.stderr
    relative = workroom(warm_env, "hosts", "add", "c", "--provider", "ssh", "--host", "127.0.0.1",
                        "--identity", "keys/id_test", cwd=mine)
    assert relative.returncode == 0, relative.stderr
    listed = {h["name"]: h for h in json.loads(workroom(warm_env, "hosts", "list", "--json").stdout)}
    assert listed["a"]["identity"]["value"] == "~/keys/id_test"
    assert listed["c"]["identity"]["value"] == str(mine / "keys" / "id_test")
    assert "b" not in listed
    assert warm.starter_pid(warm_env) == starter


def test_ctrl_c_ends_a_warm_live_view_and_its_fork(
        sshd, app_home: AppPaths, warm_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    trust_sshd(app_home, sshd)
    save_hosts(app_home, HostsFile(hosts=(ssh_host(sshd),)))
    assert workroom(warm_env, "hosts", "list").returncode == 0
    starter = starter_of(warm_env)
    cli = subprocess.Popen([sys.executable, "-m", "workroom.cli", "status", "--watch"], env=warm_env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert cli.stdout is not None
        first = cli.stdout.readline()  # the live view's first line, from the fork: the command runs there
        assert first.split()[:1] in (["box1"], ["vm"]) or "HOST" in first.upper(), first
        forks = children(starter)
        assert len(forks) == 1, forks
        cli.send_signal(signal.SIGINT)
        _, err = cli.communicate(timeout=10)
    finally:
        stop_process(cli, 10)
    assert cli.returncode == 130 and "Traceback" not in err, (cli.returncode, err)
    wait_for(lambda: not children(starter), 10, "the fork ended with its command")


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_a_starter_whose_code_changed_on_disk_runs_nothing_more(
        app_home: AppPaths, warm_env: dict[str, str], tmp_path: Path) -> None:
    """An upgrade (here: a module of a copy of the app touched) while a starter waits: the next command runs
    itself, with the code on disk, and the old starter ends; the command after it has a new one."""
    copy = tmp_path / "app"
    shutil.copytree(ROOT / "app" / "workroom", copy / "workroom", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(warm_env, PYTHONPATH=str(copy))
    assert workroom(env, "hosts", "list").returncode == 0
    old = starter_of(env)
    words = copy / "workroom" / "cli" / "words.py"
    os.utime(words, ns=(time.time_ns(), time.time_ns() + 10**9))
    after = workroom(env, "hosts", "list", "--json")
    assert after.returncode == 0 and isinstance(json.loads(after.stdout), list), after.stderr
    wait_for(lambda: not Path(f"/proc/{old}").exists(), 10, "the old starter ended")
    assert starter_of(env) != old


def test_a_command_of_another_copy_of_the_app_runs_itself_and_the_next_is_served_by_its_own_code(
        app_home: AppPaths, warm_env: dict[str, str], tmp_path: Path) -> None:
    """The home's starter runs this checkout's code; a command from another copy (another venv, an upgrade beside
    it) is refused by the fork and runs itself, with its own code; that starter ends and the copy's command
    leaves one of its own code, which serves the copy's next command."""
    assert workroom(warm_env, "hosts", "list").returncode == 0
    starter = starter_of(warm_env)
    copy = tmp_path / "other"
    shutil.copytree(ROOT / "app" / "workroom", copy / "workroom", ignore=shutil.ignore_patterns("__pycache__"))
    # Found from the folder it is typed in (`python -m` puts that first), not from PYTHONPATH: the starter it
    # leaves must import that copy, not the one this interpreter's own path leads to.
    other = workroom(warm_env, "hosts", "list", "--json", python=("-X", "importtime"), cwd=copy)
    assert other.returncode == 0 and isinstance(json.loads(other.stdout), list), other.stderr
    assert "pydantic" in imported_heavy(other.stderr)  # it ran itself
    wait_for(lambda: not alive(starter), 10, "the starter of other code ended")
    if warm.starter_pid(warm_env) is None:  # it looked for a starter before the old one had quite ended
        assert workroom(warm_env, "hosts", "list", cwd=copy).returncode == 0
    replaced = starter_of(warm_env)
    for _ in range(2):  # the copy's commands are served warm from now on
        again = workroom(warm_env, "hosts", "list", "--json", python=("-X", "importtime"), cwd=copy)
        assert again.stdout == other.stdout and imported_heavy(again.stderr) == set(), said(again.stderr)
    assert warm.starter_pid(warm_env) == replaced


def alive(pid: int) -> bool:
    """A process that runs (not a zombie left to a parent that does not reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_module_in_the_commands_folder_is_never_imported(
        app_home: AppPaths, warm_env: dict[str, str], tmp_path: Path) -> None:
    """A command typed in a folder that holds modules of the names the command imports late (a cloned repository
    with a `pickle.py`) runs none of them, warm or not: the fork's path holds no folder of the person's."""
    assert workroom(warm_env, "hosts", "list").returncode == 0
    starter_of(warm_env)
    planted = tmp_path / "repo"
    planted.mkdir()
    marker = tmp_path / "ran"
    for name in ("pickle", "platformdirs", "ctypes", "keyring", "secretstorage", "subprocess", "shlex", "uuid"):
        (planted / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    for argv in (["settings", "get"], ["app", "status"], ["hosts", "list"], ["why", "nowhere"]):
        done = subprocess.run([sys.executable, "-P", "-X", "importtime", "-m", "workroom.cli", *argv], env=warm_env,
                              cwd=planted, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert "Traceback" not in done.stderr and imported_heavy(done.stderr) == set(), said(done.stderr)
    assert not marker.exists(), marker.read_text()


def test_the_log_a_command_shows_is_the_same_warm(
        app_home: AppPaths, warm_env: dict[str, str]) -> None:
    """A server that greets and then sends what is no SSH: what the command says on stderr (paramiko's own log
    included or not, as Python's last-resort handler decides) is the same warm as run itself."""
    server = QuietServer(b"SSH-2.0-OpenSSH_9.2\r\n" + bytes(range(256)) * 4)
    try:
        save_hosts(app_home, HostsFile(hosts=(Host(name="odd", provider="ssh", address="127.0.0.1",
                                                   port=server.port, user="nobody"),)))
        off = dict(warm_env, WORKROOM_WARM="0")
        itself = workroom(off, "connect", "odd")
        assert workroom(warm_env, "hosts", "list").returncode == 0
        starter_of(warm_env)
        through = workroom(warm_env, "connect", "odd", python=("-X", "importtime"))
    finally:
        server.stop()
    assert imported_heavy(through.stderr) == set()
    said = "\n".join(line for line in through.stderr.splitlines() if not line.startswith("import time:"))
    assert (through.returncode, said.strip()) == (itself.returncode, itself.stderr.strip())
    assert itself.returncode != 0 and "Traceback" not in itself.stderr


def test_no_starter_where_none_could_listen_or_after_app_commands(
        warm_env: dict[str, str], tmp_path: Path) -> None:
    """A home whose socket path is longer than a socket address holds leaves no starter (one would import for
    nothing at every command); nor does `workroom app status|quit` run with no starter."""
    assert workroom(warm_env, "app", "quit").returncode == 0
    assert workroom(warm_env, "app", "status").returncode == 1
    long_home = tmp_path / ("h" * 120)
    deep = dict(warm_env, WORKROOM_HOME=str(long_home))
    assert workroom(deep, "hosts", "list").returncode == 0
    time.sleep(1.5)
    assert warm.starter_pid(warm_env) is None and warm.starter_pid(deep) is None
    assert warm_starters_under(tmp_path) == []
    assert not (Path(warm.folder(deep)) / warm.LOCK_NAME).exists()  # none was even started


def test_a_starter_ends_unused_at_app_quit_and_killed_leaves_nothing_in_the_way(
        app_home: AppPaths, warm_env: dict[str, str]) -> None:
    brief = dict(warm_env, WORKROOM_WARM_IDLE_SECONDS="3")
    assert workroom(brief, "hosts", "list").returncode == 0
    first = starter_of(brief)
    wait_for(lambda: not Path(f"/proc/{first}").exists(), 15, "the unused starter ended")
    folder = Path(warm.folder(brief))
    assert not (folder / warm.SOCKET_NAME).exists() and warm.starter_pid(brief) is None

    assert workroom(warm_env, "hosts", "list").returncode == 0
    second = starter_of(warm_env)
    quit_ = workroom(warm_env, "app", "quit")
    assert quit_.returncode == 0 and f"warm starter (process {second}) has ended" in quit_.stdout
    wait_for(lambda: not Path(f"/proc/{second}").exists(), 10, "the starter ended at app quit")

    assert workroom(warm_env, "hosts", "list").returncode == 0
    third = starter_of(warm_env)
    os.kill(third, signal.SIGKILL)  # its socket and lock file stay behind
    wait_for(lambda: not Path(f"/proc/{third}").exists() or "Z" in Path(f"/proc/{third}/stat").read_text().split()[2],
             10, "the starter killed")
    assert (folder / warm.SOCKET_NAME).exists()
    listed = workroom(warm_env, "hosts", "list", "--json")
    assert listed.returncode == 0 and isinstance(json.loads(listed.stdout), list), listed.stderr
    assert starter_of(warm_env) != third


def test_two_starters_started_at_once_leave_one(app_home: AppPaths, warm_env: dict[str, str]) -> None:
    starters = [subprocess.Popen([sys.executable, "-m", "workroom.cli.warm_server"], env=warm_env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        live = starter_of(warm_env)
        wait_for(lambda: sum(p.poll() is None for p in starters) == 1, 60, "the second starter gave way")
        assert [p.pid for p in starters if p.poll() is None] == [live]
        assert all(p.returncode == 0 for p in starters if p.poll() is not None)
    finally:
        for p in starters:
            stop_process(p, 10)


def test_with_starters_off_a_command_leaves_nothing_running(app_home: AppPaths, warm_env: dict[str, str]) -> None:
    off = dict(warm_env, WORKROOM_WARM="0")
    assert workroom(off, "hosts", "list").returncode == 0
    time.sleep(1.0)
    assert warm.starter_pid(off) is None and not (Path(warm.folder(off)) / warm.SOCKET_NAME).exists()
