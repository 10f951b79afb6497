"""Who could have changed the agent is checked before it runs, at every start, with the expected hash
outside the bundle. Real sshd, a real login user and a real second user of the host in its group (what
umask 002 makes common): the second user swaps the install folder or the bundle, the agent dies, and its
supervisor's restart must not run their code as the login user."""

from __future__ import annotations

import grp
import io
import os
import pwd
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import sshd as sshd_mod
from integration.remote.test_ssh_connection import connect, trusted_known_hosts
from workroom.agent_bundle import AgentBundle, locate_agent_bundle
from workroom.providers.ssh_shell import SshShell
from workroom.remote.agent_install import AgentInstaller, AgentInstallError, AgentLayout, ServeOptions

pytestmark = [pytest.mark.integration, pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a second user")]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> AgentBundle:
    return locate_agent_bundle(tmp_path_factory.mktemp("bundle-cache"))


@pytest.fixture
def intruder(sshd) -> Iterator[pwd.struct_passwd]:  # type: ignore[no-untyped-def]
    group = grp.getgrgid(pwd.getpwnam(sshd.user).pw_gid).gr_name
    entry = sshd_mod.create_other_user(group)
    try:
        yield entry
    finally:
        sshd_mod.delete_test_user(entry.pw_name)


@pytest.fixture
def marker_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="wr-marker-"))
    d.chmod(0o777)
    try:
        yield d
    finally:
        for p in d.iterdir():
            p.unlink()
        d.rmdir()


def planted(marker: Path) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("__main__.py", f"open({str(marker)!r}, 'w').write('ran')\nimport time\ntime.sleep(30)\n")
        z.writestr("wr_agent/__init__.py", '__version__ = "0.0.1"\n')
    return b"#!/usr/bin/env python3\n" + out.getvalue()


def as_user(entry: pwd.struct_passwd, script: str) -> None:
    subprocess.run(["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups",
                    "sh", "-c", script], check=True, capture_output=True, timeout=30)


def install(sshd, tmp_path: Path, bundle: AgentBundle):  # type: ignore[no-untyped-def]
    conn = connect(sshd, trusted_known_hosts(tmp_path, sshd))
    installer = AgentInstaller(SshShell(conn), bundle, AgentLayout(),
                               ServeOptions(workroom="trust", candidates="user", heartbeat=False))
    report = installer.ensure()
    assert report.action == "installed", report
    return conn, installer


def crash_the_agent(sshd) -> None:  # type: ignore[no-untyped-def]
    out = subprocess.run(["pgrep", "-u", str(sshd.uid), "-x", "wr-agent"], capture_output=True, text=True)
    pids = [int(p) for p in out.stdout.split()]
    assert pids, "no serving agent to crash"
    for pid in pids:
        os.kill(pid, 9)


def log_of(sshd) -> str:  # type: ignore[no-untyped-def]
    path = sshd.home / ".local" / "state" / "wr-agent" / "agent.sock.log"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if "refusing to start" in text:
            return text
        time.sleep(0.1)
    return path.read_text(errors="replace") if path.exists() else ""


def test_a_folder_swapped_by_another_user_is_not_run_by_the_next_restart(
        sshd, tmp_path: Path, bundle: AgentBundle, intruder: pwd.struct_passwd, marker_dir: Path) -> None:
    conn, installer = install(sshd, tmp_path, bundle)
    try:
        share = sshd.home / ".local" / "share"
        (sshd.home / ".local").chmod(0o775)  # what umask 002 makes
        share.chmod(0o775)
        marker = marker_dir / "ran"
        payload = marker_dir / "planted.pyz"
        payload.write_bytes(planted(marker))
        payload.chmod(0o644)
        as_user(intruder, f"cd {share} && mv wr-agent wr-agent.old && mkdir wr-agent && "
                          f"cp {payload} wr-agent/wr-agent.pyz && chmod 755 wr-agent wr-agent/wr-agent.pyz")
        crash_the_agent(sshd)
        log = log_of(sshd)
        time.sleep(1.5)  # the supervisor restarts within ~0.5 s
        assert not marker.exists(), "the restart ran the other user's bundle as the login user"
        assert "refusing to start the agent" in log and ".local" in log, log[-2000:]
        with pytest.raises(AgentInstallError) as info:
            installer.probe()
        assert "not safe" in info.value.title and ".local" in info.value.message
    finally:
        conn.close()


def test_a_bundle_changed_behind_the_supervisors_back_is_not_run(
        sshd, tmp_path: Path, bundle: AgentBundle, marker_dir: Path) -> None:
    """The folders are private, yet the bundle's bytes are not the ones the app started (swapped while a
    folder was open, say): the hash on the supervisor's command line refuses it."""
    conn, _ = install(sshd, tmp_path, bundle)
    try:
        marker = marker_dir / "ran"
        conn.sftp_put(planted(marker), ".local/share/wr-agent/wr-agent.pyz", mode=0o600)
        crash_the_agent(sshd)
        log = log_of(sshd)
        time.sleep(1.5)
        assert not marker.exists(), "the restart ran a bundle whose hash it was not given"
        assert "not the expected " + bundle.sha256 in log, log[-2000:]
    finally:
        conn.close()


def test_the_launcher_is_the_same_on_both_sides(bundle: AgentBundle) -> None:
    """The app writes the launcher's command line for the unit, plist and first start; the agent writes it
    for its own restarts and hand-offs: the same argv from the same inputs."""
    from workroom.remote.agent_install import launcher_argv
    from wr_agent import launcher

    app = launcher_argv(bundle, ("python3",), "a" * 64, "/b/wr-agent.pyz", "/f", ["serve", "--x"])
    agent = launcher.command(["python3"], "a" * 64, "/b/wr-agent.pyz", "/f", ["serve", "--x"],
                             source=bundle.launcher_source())
    assert app == agent


def serving_argv(sshd, timeout: float = 10.0) -> list[str]:  # type: ignore[no-untyped-def]
    """The command line of the login user's serving agent, once there is one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["pgrep", "-u", str(sshd.uid), "-x", "wr-agent"], capture_output=True, text=True)
        for pid in out.stdout.split():
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode() for a in f.read().split(b"\0") if a]
            if "serve" in argv:
                return argv
        time.sleep(0.1)
    raise AssertionError("no serving agent")


def test_the_agent_runs_apart_from_the_users_python_setup(sshd, tmp_path: Path, bundle: AgentBundle) -> None:
    """Started by the installer and restarted by its supervisor, the agent runs `python3 -I -S BUNDLE serve …`:
    no site-packages and their .pth files (~5 MB resident here), no PYTHON* variables, no user site."""
    conn, _ = install(sshd, tmp_path, bundle)
    try:
        for _ in range(2):  # as installed, then as the supervisor restarts it
            argv = serving_argv(sshd)
            at = next(i for i, a in enumerate(argv) if a.endswith("wr-agent.pyz"))
            assert argv[1:at] == ["-I", "-S"], argv
            crash_the_agent(sshd)
            time.sleep(1.0)
    finally:
        conn.close()
