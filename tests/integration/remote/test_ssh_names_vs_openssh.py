"""Host and user names that OpenSSH's client refuses are refused by the app too, before any ssh_config token
expands: `Match exec` and `ProxyCommand` (with ProxyUseFdpass, a `/bin/sh -c`) run what `%h` and `%r` put in.

The oracle is the real `ssh -G` of this machine, run on a table of names; the hostile names go through every
face that can bring one in (a `workroom hosts add`, a hosts file edited by hand and then `workroom status`, a
HostName in ~/.ssh/config) against a real ~/.ssh/config whose `Match exec` writes a marker file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.procs import end_local_agents_under
from workroom.core.errors import UserError
from workroom.core.hosts import Host, HostsFile, UnsafeHostNameError
from workroom.core.ssh_names import SshNameKind, ssh_accepts
from workroom.remote.ssh_config import SshConfigError, resolve_target

pytestmark = pytest.mark.integration

HOSTS = ["box.example", "10.0.0.1", "fe80::1%eth0", "under_score", "üñí.example", "a*b", "a?b", "a!b", "a=b",
         "a[b]", "a%b", "a@b", "a/b", "a~b", "a#b", "a:b", "a+b", "trailing-",
         "x;id", "x;id>/tmp/pwned;", "a,b", "a$b", "a`id`", "a'b", 'a"b', "a\\b", "a&b", "a<b", "a>b", "a|b",
         "a(b", "a)b", "a{b", "a}b", "a b", "a\tb", "a\nb", "a\x01b", "a\x7fb", "-oProxyCommand=x", "-x"]
USERS = ["alice", "a.b-c_d", "a$b", "a b", "a,b", "a%b", "a@b", "a\\b", "üser", "a*b", "a!b", "a#b",
         "a;b", "a -b", "a\t-b", "-l", "a\\", "a'b", 'a"b', "a`b", "a&b", "a<b", "a>b", "a|b", "a(b", "a)b",
         "a{b", "a}b", "a\x01b", "a\x7fb", "a\tb"]


def _ssh_g(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh", "-G", "-F", "/dev/null", *args], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty_config"
    path.write_text("")
    return path


@pytest.fixture(scope="module")
def ssh_client() -> None:
    if shutil.which("ssh") is None:
        pytest.skip("needs the OpenSSH client")


@pytest.mark.parametrize("name", HOSTS, ids=repr)
def test_a_host_name_is_refused_exactly_when_ssh_refuses_it(ssh_client: None, name: str, tmp_path: Path) -> None:
    done = _ssh_g("--", name)
    ssh_refused = "hostname contains invalid characters" in done.stderr
    assert ssh_refused or done.returncode == 0, done.stderr
    assert ssh_accepts(SshNameKind.HOST, name) is not ssh_refused
    try:
        resolve_target(name, config_path=_empty(tmp_path), home=Path("/nonexistent"), default_identities=[])
        ours_refused = False
    except UnsafeHostNameError:
        ours_refused = True
    except SshConfigError as error:  # whitespace: refused by the resolver's older check, "not a host name"
        assert "not a host name" in error.message
        ours_refused = True
    assert ours_refused is ssh_refused


@pytest.mark.parametrize("user", USERS, ids=repr)
def test_a_user_is_refused_exactly_when_ssh_refuses_it(ssh_client: None, user: str, tmp_path: Path) -> None:
    done = _ssh_g("-l", user, "box.example")
    ssh_refused = "remote username contains invalid characters" in done.stderr
    assert ssh_refused or done.returncode == 0, done.stderr
    assert ssh_accepts(SshNameKind.USER, user) is not ssh_refused
    refused = False
    try:
        resolve_target("box.example", user=user, config_path=_empty(tmp_path), home=Path("/nonexistent"),
                       default_identities=[])
    except UnsafeHostNameError:
        refused = True
    assert refused is ssh_refused
    # The same user typed as user@host: ssh splits at the last '@' and checks the user the same way.
    if "@" not in user and not user.startswith("-"):
        typed = _ssh_g(f"{user}@box.example")
        assert ("remote username contains invalid characters" in typed.stderr) is ssh_refused


def _home_with_marking_config(tmp_path: Path, extra: str = "") -> tuple[Path, Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    marker = tmp_path / "marker"
    (home / ".ssh" / "config").write_text(f'Match exec "echo %h %r >> {marker}"\n  Port 2222\n{extra}')
    return home, marker


HOSTILE = "x;id>{pwned};"


def test_match_exec_never_runs_a_hostile_host_or_user(tmp_path: Path) -> None:
    home, marker = _home_with_marking_config(tmp_path)
    pwned = tmp_path / "pwned"
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    # The config really runs its Match exec, with %h and %r, for a name ssh accepts:
    ok = resolve_target("box.example", user="alice", home=home, environ=env, default_identities=[])
    assert ok.port == 2222 and marker.read_text() == "box.example alice\n"
    for host, user in ((HOSTILE.format(pwned=pwned), None), ("box.example", HOSTILE.format(pwned=pwned))):
        with pytest.raises(UnsafeHostNameError) as refused:
            resolve_target(host, user=user, home=home, environ=env, default_identities=[])
        assert "ssh refuses it too" in refused.value.message
    with pytest.raises(UnsafeHostNameError):
        resolve_target(f"{HOSTILE.format(pwned=pwned)}@box.example", home=home, environ=env, default_identities=[])
    assert not pwned.exists() and marker.read_text() == "box.example alice\n", "the Match exec ran again"


def test_a_hostile_hostname_in_the_config_runs_nothing_through_match_exec_or_an_fdpass_proxy(tmp_path: Path) -> None:
    """The config's own HostName becomes %h for a later `Match exec` and for the ProxyCommand, which with
    ProxyUseFdpass runs under /bin/sh -c. ssh trusts its config there; the app refuses such a HostName."""
    pwned, marker = tmp_path / "pwned", tmp_path / "marker"
    home, _ = _home_with_marking_config(tmp_path, extra=(
        f"Host fd\n  HostName fd.example\n  ProxyCommand echo %h >> {tmp_path}/proxy; false\n  ProxyUseFdpass yes\n"
        f"Host evil\n  HostName {HOSTILE.format(pwned=pwned)}\n"
        f"Host evilfd\n  HostName {HOSTILE.format(pwned=pwned)}\n  ProxyCommand echo %h\n  ProxyUseFdpass yes\n"
        f'Match final exec "echo final %h >> {marker}"\n'))
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    fd = resolve_target("fd", home=home, environ=env, default_identities=[])
    assert fd.proxy_use_fdpass and fd.proxy_command == f"echo fd.example >> {tmp_path}/proxy; false"
    # The fd-passing proxy really runs through the shell (so %h must be safe by then):
    from workroom.remote.ssh_connection import HostUnreachable
    from workroom.remote.ssh_errors import open_fdpass_proxy
    with pytest.raises(HostUnreachable):
        open_fdpass_proxy(fd, 5.0)
    assert (tmp_path / "proxy").read_text() == "fd.example\n"
    for alias in ("evil", "evilfd"):
        with pytest.raises(SshConfigError) as refused:
            resolve_target(alias, home=home, environ=env, default_identities=[])
        assert "HostName" in refused.value.message and "x;id>" in refused.value.message
    assert not pwned.exists()
    assert "x;id" not in marker.read_text(), "a Match exec ran with the hostile HostName"
    assert "evil root" in marker.read_text()  # the alias itself, typed, is harmless and did reach %h


@pytest.fixture(autouse=True)
def _no_agent_left(tmp_path: Path) -> Iterator[None]:
    """`workroom status` reaches this computer too, whose agent outlives the command: killed by pid after."""
    yield
    end_local_agents_under(tmp_path / "wr")


def _workroom(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    env = dict(os.environ, WORKROOM_HOME=str(tmp_path / "wr"), HOME=str(home))
    return subprocess.run([sys.executable, "-m", "workroom.cli", *args], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_every_face_refuses_the_hostile_address_and_runs_nothing(tmp_path: Path) -> None:
    """`workroom hosts add odd --host 'x;…'` is refused in words; a hosts file edited by hand to hold it is
    refused at `workroom status --live`, before ~/.ssh/config's Match exec (a look resolves nothing)."""
    _, marker = _home_with_marking_config(tmp_path)
    pwned = tmp_path / "pwned"
    hostile = HOSTILE.format(pwned=pwned)
    added = _workroom(tmp_path, "hosts", "add", "odd", "--provider", "ssh", "--host", hostile)
    assert added.returncode != 0 and "Traceback" not in added.stderr
    assert "cannot contain ';'" in added.stderr and "ssh refuses it too" in added.stderr, added.stderr
    refused_user = _workroom(tmp_path, "hosts", "add", "odd", "--provider", "ssh", "--host", "box.example",
                             "--user", hostile)
    assert refused_user.returncode != 0 and "host user cannot be used" in refused_user.stderr.lower()
    assert _workroom(tmp_path, "hosts", "add", "odd", "--provider", "ssh", "--host", "127.0.0.1",
                     "--port", "9").returncode == 0
    hosts_file = tmp_path / "wr" / "config" / "hosts.json"
    assert hosts_file.exists(), list((tmp_path / "wr").rglob("*"))
    data = json.loads(hosts_file.read_text())
    for host in data["hosts"]:
        if host["name"] == "odd":
            host["address"] = hostile
    hosts_file.write_text(json.dumps(data))
    look = _workroom(tmp_path, "status")  # a look reaches no host: nothing is resolved, nothing runs
    assert look.returncode == 0 and "Traceback" not in look.stderr, look.stderr
    assert not pwned.exists() and not marker.exists(), "a Match exec ran for the hand-edited host"
    status = _workroom(tmp_path, "status", "--live")
    assert "Traceback" not in status.stderr
    assert "A host address cannot contain ';'" in status.stdout, status.stdout + status.stderr
    assert not pwned.exists() and not marker.exists(), "a Match exec ran for the hand-edited host"


def test_the_dialogs_rules_are_the_hosts_files_rules() -> None:
    """What `HostsFile.add` refuses is what ssh refuses for the address, the name as an alias, and the user;
    an edit checks only what it brings in."""
    hosts = HostsFile(hosts=())
    for name in HOSTS:
        if ssh_accepts(SshNameKind.HOST, name) or any(ch.isspace() or ch < " " or ch == "\x7f" for ch in name):
            continue  # whitespace and control characters: the Host model refuses them before any of this
        with pytest.raises(UnsafeHostNameError):
            hosts.add(Host(name="box", provider="ssh", address=name))
    with pytest.raises(UnsafeHostNameError) as by_name:
        hosts.add(Host(name="x;id", provider="ssh"))  # no address: the name is what ssh gets
    assert by_name.value.what == "name"
    assert hosts.add(Host(name="x (old)", provider="ssh", address="box.example")).names() == ["x (old)"]
    assert hosts.add(Host(name="x;id", provider="local")).names() == ["x;id"]  # never reaches ssh
    loaded = HostsFile.model_validate({"hosts": [{"name": "old", "provider": "ssh", "address": "a$b"}]})
    assert loaded.edit("old", Host(name="old", provider="ssh", address="a$b", port=2222)).require("old").port == 2222
    with pytest.raises(UnsafeHostNameError):
        loaded.edit("old", Host(name="old", provider="ssh", address="a$b", user="u|x"))
    assert isinstance(UnsafeHostNameError("user", "x", "y"), UserError)
