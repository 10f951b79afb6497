"""The install folder on a host decides who could have written the bundle the app then runs. An open or
foreign folder is repaired or refused, and a bundle that is not ours is never run to ask its version.
Runs the installer's real probe on this computer (LocalShell), as the app does for the local host."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import zipfile
from pathlib import Path

import pytest
from workroom.agent_bundle import AgentBundle
from workroom.remote.agent_install import AgentInstaller, AgentInstallError, AgentLayout, ServeOptions
from workroom.remote.host_shell import LocalShell
from wr_agent import VERSION, bundle

pytestmark = pytest.mark.integration


def planted_bundle(marker: Path) -> bytes:
    """A zipapp that claims a newer version and, when run at all, leaves `marker` behind."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
        z.writestr("wr_agent/__init__.py", '__version__ = "99.0.0"\n')
    return b"#!/usr/bin/env python3\n" + out.getvalue()


def installer(tmp_path: Path) -> tuple[AgentInstaller, AgentLayout]:
    data = bundle.bundle_bytes()
    ours = AgentBundle(data=data, sha256=hashlib.sha256(data).hexdigest(), version=VERSION)
    layout = AgentLayout(install_dir=str(tmp_path / "share"), state_dir=str(tmp_path / "state"))
    return AgentInstaller(LocalShell(), ours, layout, ServeOptions(workroom="t", heartbeat=False)), layout


def test_a_folder_open_to_others_is_repaired_and_its_bundle_never_run(tmp_path: Path) -> None:
    inst, layout = installer(tmp_path)
    folder = Path(layout.install_dir)
    folder.mkdir()
    folder.chmod(0o777)
    marker = tmp_path / "ran"
    Path(layout.bundle_path).write_bytes(planted_bundle(marker))
    probe = inst.probe()
    assert not marker.exists(), "the probe ran a bundle it had not verified"
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    assert probe.sha256 is None  # not trusted: the next step replaces it with ours


def test_an_unknown_bundle_in_a_private_folder_is_read_not_run(tmp_path: Path) -> None:
    inst, layout = installer(tmp_path)
    Path(layout.install_dir).mkdir(mode=0o700)
    marker = tmp_path / "ran"
    Path(layout.bundle_path).write_bytes(planted_bundle(marker))
    Path(layout.bundle_path).chmod(0o600)
    probe = inst.probe()
    assert not marker.exists()
    assert probe.version is not None and "99.0.0" in probe.version


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the folder to another user")
def test_a_folder_of_another_user_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    inst, layout = installer(tmp_path)
    folder = Path(layout.install_dir)
    folder.mkdir(mode=0o755)
    os.chown(folder, 65534, 65534)
    with pytest.raises(AgentInstallError) as e:
        inst.probe()
    assert "not safe" in e.value.title and "uid 65534" in e.value.message
