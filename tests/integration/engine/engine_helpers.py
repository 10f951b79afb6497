"""Helpers for engine tests: hosts on the test sshd, a variant agent bundle, agent PIDs."""

from __future__ import annotations

import asyncio
import hashlib
import io
import subprocess
import time
import zipfile
from pathlib import Path

from workroom.agent_bundle import AgentBundle
from workroom.core.hosts import Host, IdentityRef
from workroom.paths import AppPaths


def variant_bundle(bundle: AgentBundle, marker: str) -> AgentBundle:
    """The same agent with one extra file: different bytes and hash, same version (not older)."""
    out = io.BytesIO()
    src = zipfile.ZipFile(io.BytesIO(bundle.data))
    head = bundle.data[: bundle.data.index(b"PK")]  # the zipapp's shebang line
    out.write(head)
    with zipfile.ZipFile(out, "a") as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info))
        dst.writestr(zipfile.ZipInfo("wr_agent/_variant.txt", (1980, 1, 1, 0, 0, 0)), marker)
    data = out.getvalue()
    return AgentBundle(data=data, sha256=hashlib.sha256(data).hexdigest(), version=bundle.version)


def ssh_host(sshd, name: str = "box1", provider: str = "ssh", **extra) -> Host:  # type: ignore[no-untyped-def]
    return Host(name=name, provider=provider, address=sshd.host, port=sshd.port, user=sshd.user,
                identity=IdentityRef.file(str(sshd.key_path)), agent_candidates="user", **extra)


def trust_sshd(paths: AppPaths, sshd) -> None:  # type: ignore[no-untyped-def]
    with paths.known_hosts_file.open("a") as handle:
        handle.write(sshd.host_key_line + "\n")


def host_agent_status_argv(sshd) -> list[str]:  # type: ignore[no-untyped-def]
    """The command that asks the agent installed for the sshd's user for its status, on the host itself with
    the installed bundle (not through the app): its stdout is the status, as JSON."""
    bundle = sshd.home / ".local/share/wr-agent/wr-agent.pyz"
    sock = sshd.home / ".local/state/wr-agent/agent.sock"
    return ["runuser", "-u", sshd.user, "--", "python3", str(bundle), "status", "--socket", str(sock)]


def agent_pids(uid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-u", str(uid), "-f", "wr-agent.pyz serve"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def tampered_bundle(marker: Path) -> bytes:
    """A zipapp that, if ever run, leaves `marker` behind (and says nothing a relay would)."""
    out = io.BytesIO()
    out.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(out, "a") as z:
        z.writestr("__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    return out.getvalue()


async def wait_until(predicate, seconds: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll `predicate` on the event loop until it holds; fail after `seconds` saying `what` was awaited."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:g} s: {what}")
        await asyncio.sleep(0.05)


async def wait_put_right(session, installed: Path, bundle: AgentBundle) -> None:  # type: ignore[no-untyped-def]
    """After a direct reconnect to an agent whose installed file was changed: the probe that follows finds it,
    and the reconnect it causes replaces the file; wait for that and for the session to be live again."""
    from workroom.core.connection import ConnectionState

    await wait_until(lambda: hashlib.sha256(installed.read_bytes()).hexdigest() == bundle.sha256, 60,
                     "the installed bundle replaced")
    await wait_until(lambda: session.snapshot().connection.state in (ConnectionState.LIVE, ConnectionState.QUIET),
                     60, "live again")


async def wait_until_let_go(session, seconds: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Wait for a platform session to let go of its idle box (RELEASED); failing, say what the agent last said."""
    from workroom.core.connection import ConnectionState

    try:
        await wait_until(lambda: session.connection.state is ConnectionState.RELEASED, seconds, what)
    except AssertionError as late:
        status = session.status
        said = "nothing" if status is None else f"{status.verdict.value} ({'; '.join(status.busy_reasons)})"
        raise AssertionError(f"{late}: {session.connection.state.value}, its agent last said {said}") from None
