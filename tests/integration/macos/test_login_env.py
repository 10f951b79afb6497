"""A ProxyCommand found only through the login shell's PATH connects when the app has Finder's PATH.

Real bash as the login shell (its ~/.bash_profile adds the tool's folder, as Homebrew's shellenv does),
the real OpenSSH server and the app's own SSH connection; only the PATH is narrowed to what Finder gives.
The login shell's PATH read within the limit runs with bash here and, on a Mac (marked mac), with the Mac's
own zsh and a ~/.zshrc that loads completion.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from workroom.platform import login_env
from workroom.remote.host_keys import KnownHosts
from workroom.remote.ssh_config import resolve_target
from workroom.remote.ssh_connection import HostUnreachable, SshConnection

pytestmark = pytest.mark.integration

FINDER_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


def _login_home(tmp_path: Path, profile: str) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / ".bash_profile").write_text(profile)
    return home


def test_proxycommand_on_the_login_shells_path_connects(sshd, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    known_file = tmp_path / "known_hosts"
    known_file.write_text(sshd.host_key_line + "\n")
    tools = tmp_path / "brew" / "bin"
    tools.mkdir(parents=True)
    tool = tools / f"wr-tunnel-{os.getpid()}"
    tool.write_text(
        "#!/bin/sh\n"
        f"exec ssh -q -i {sshd.key_path} -o BatchMode=yes -o UserKnownHostsFile={known_file} "
        f"-o StrictHostKeyChecking=yes -p {sshd.port} {sshd.user}@{sshd.host} -W \"$1:$2\"\n")
    tool.chmod(0o755)
    agent_sock = tmp_path / "agent-from-zshrc.sock"
    home = _login_home(tmp_path, f'export PATH="{tools}:$PATH"\nexport SSH_AUTH_SOCK={agent_sock}\n')
    config = tmp_path / "ssh_config"
    config.write_text(f"Host tunneled\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.user}\n"
                      f"  IdentityFile {sshd.key_path}\n  ProxyCommand {tool.name} %h %p\n")
    monkeypatch.setenv("PATH", FINDER_PATH)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.delenv(login_env.DISABLE_ENV, raising=False)
    known = KnownHosts(known_file, user_file=None)
    target = resolve_target("tunneled", config_path=config, default_identities=())

    with pytest.raises(HostUnreachable):  # what a Finder launch met before
        SshConnection.connect(target, known, timeout=10, use_agent=False).close()

    found = login_env.adopt_login_env()
    assert found is not None and found.error is None
    assert os.environ["PATH"].split(":")[0] == str(tools)
    assert all(part in os.environ["PATH"].split(":") for part in FINDER_PATH.split(":"))
    assert os.environ["SSH_AUTH_SOCK"] == str(agent_sock)
    with SshConnection.connect(target, known, timeout=10, use_agent=False) as conn:
        assert conn.exec("echo tunneled").stdout == b"tunneled\n"


def test_a_hanging_login_shell_is_cut_off_and_the_path_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _login_home(tmp_path, "sleep 60\n")
    monkeypatch.setenv("PATH", FINDER_PATH)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.delenv(login_env.DISABLE_ENV, raising=False)
    started = time.monotonic()
    found = login_env.adopt_login_env(timeout=1.0)
    assert time.monotonic() - started < 5
    assert found is not None and found.error is not None and "longer than 1 s" in found.error
    assert os.environ["PATH"].startswith(FINDER_PATH)


LOGIN_SHELLS = {
    "bash": ("/bin/bash", ".bash_profile", None),
    # The Mac's own zsh, its default login shell, with a ~/.zshrc that loads completion as oh-my-zsh does.
    "zsh": ("/bin/zsh", ".zprofile", "autoload -Uz compinit && compinit -u\nPROMPT='%n@%m %~ %# '\n"),
}


@pytest.mark.parametrize("shell", ["bash", pytest.param("zsh", marks=pytest.mark.mac)])
def test_the_login_shells_path_is_read_within_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         shell: str) -> None:
    program, profile, rc = LOGIN_SHELLS[shell]
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    tools = tmp_path / "brew" / "bin"
    tools.mkdir(parents=True)
    (home / profile).write_text(f'export PATH="{tools}:$PATH"\n')
    if rc is not None:
        (home / ".zshrc").write_text(rc)
    monkeypatch.setenv("PATH", FINDER_PATH)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", program)
    monkeypatch.delenv(login_env.DISABLE_ENV, raising=False)
    started = time.monotonic()
    found = login_env.adopt_login_env()
    took = time.monotonic() - started
    assert found is not None and found.error is None, found
    assert os.environ["PATH"].split(":")[0] == str(tools)
    assert took < login_env.TIME_LIMIT_SECONDS, took
    print(f"\n[login env] {program} -l -i: {took:.2f} s")
