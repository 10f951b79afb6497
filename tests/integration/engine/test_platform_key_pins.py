"""A platform box's host-key pin is kept in the state folder (docs/security.md, "Platform boxes"): within one build
of a Coder workspace, another key is refused by the app and by a command run without it alike; a new build's key
is taken by both.

The real `coder` talks to a Coder deployment, which cannot run here: the fake `coder` on PATH
(tests/fixtures/fake_platforms.py, its sources named there) proxies `ssh --stdio` to a real sshd in a network
namespace of its own; "the same build shows another key" is the fake's box pointed at a second real sshd with
its own host key (the box's sshd re-keyed under the platform's feet).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from fixtures import sshd as sshd_mod
from fixtures.fake_platforms import Box
from workroom.core.connection import ConnectionState
from workroom.core.errors import ExitCode, UserError
from workroom.core.hosts import Host, IdentityRef
from workroom.core.provider_specs import spec_for
from workroom.providers.coder import CoderProvider
from workroom.providers.platform_key_pins import FILE_NAME
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration

WORKROOM = [sys.executable, "-m", "workroom.cli"]
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


def cli_connect() -> subprocess.CompletedProcess[str]:
    """`workroom connect ws1 --json` as its own process, without the app (its own connection and pin check)."""
    return subprocess.run([*WORKROOM, "connect", "ws1", "--json"], capture_output=True, text=True, timeout=120)


async def app_connect(paths, bundle):  # type: ignore[no-untyped-def]
    """The app's engine connecting to ws1: its connection, or the UserError it refused with."""
    engine = Engine(paths, bundle)
    engine.use_provider(CoderProvider(engine.context, spec_for("coder")))
    try:
        snap = await engine.session("ws1").connect(timeout=60)
        return snap.connection
    except UserError as refused:
        return refused
    finally:
        await engine.close()


def test_a_changed_key_within_a_build_is_refused_by_every_face(sshd_server, sshd_own_network, app_home,
                                                               agent_bundle, fake_platform, make_netns_box,
                                                               tmp_path) -> None:
    first = sshd_own_network
    fake_platform.add(Box(name="ws1", platform="coder", state="running", ssh_host=first.host, ssh_port=first.port,
                          kill_uid=first.uid))
    engine = Engine(app_home, agent_bundle)
    engine.add_host(Host(name="ws1", provider="coder", user=first.user, identity=IdentityRef.file(str(first.key_path)),
                         agent_candidates="user"))
    other = sshd_mod.launch_variant(sshd_server, tmp_path / "rekeyed", netns=make_netns_box())
    try:
        # Build 1, its first key: pinned by the app's connect, and the command's connect agrees.
        connection = asyncio.run(app_connect(app_home, agent_bundle))
        assert connection.state in LIVE, connection
        pins = json.loads((app_home.state_dir / FILE_NAME).read_text())["pins"]
        assert list(pins) == ["coder.ws1"] and pins["coder.ws1"]["key"].startswith("SHA256:")
        assert (app_home.state_dir / FILE_NAME).stat().st_mode & 0o777 == 0o600
        done = cli_connect()
        assert done.returncode == 0, done.stderr
        # The same build now shows another key: refused by the command without the app, and by the app.
        fake_platform.update("ws1", ssh_host=other.host, ssh_port=other.port)
        done = cli_connect()
        assert done.returncode == ExitCode.HOST_KEY_CHANGED, (done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        refused = asyncio.run(app_connect(app_home, agent_bundle))
        assert isinstance(refused, UserError) and refused.exit_code == ExitCode.HOST_KEY_CHANGED, refused
        assert "same run of the box" in refused.message and "known_hosts" not in refused.hint, refused
        assert "same run of the box" in done.stdout  # --json: the refusal is the answer
        # A new build (a rebuild brings a new key): taken by both faces.
        fake_platform.update("ws1", build_number=2)
        done = cli_connect()
        assert done.returncode == 0, done.stderr
        connection = asyncio.run(app_connect(app_home, agent_bundle))
        assert connection.state in LIVE, connection
    finally:
        sshd_mod.stop_variant(other)
