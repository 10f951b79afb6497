"""A host without a usable python3 gets a clear error saying what was found (real shells, no fakes)."""

from __future__ import annotations

from typing import Any

import pytest
from workroom.agent_bundle import AgentBundle
from workroom.remote.agent_install import AgentInstaller, AgentInstallError, AgentLayout, ServeOptions
from workroom.remote.host_shell import ExecResult, LocalShell
from wr_agent import bundle

pytestmark = pytest.mark.integration


class ShellWithPath(LocalShell):
    """This computer's real /bin/sh, with PATH narrowed to one folder (what a bare host would have)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0, **kw: Any) -> ExecResult:
        return super().run(f"PATH={self.path}; export PATH; {cmd}", input=input, timeout=timeout, **kw)


def _installer(shell: LocalShell, tmp_path) -> AgentInstaller:  # type: ignore[no-untyped-def]
    layout = AgentLayout(install_dir=str(tmp_path / "agent"), state_dir=str(tmp_path / "run"))
    return AgentInstaller(shell, AgentBundle(bundle.bundle_bytes(), "0" * 64, "0.1.0"), layout,
                          ServeOptions(workroom="w"))


def test_no_python3_on_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "bin").mkdir()
    with pytest.raises(AgentInstallError) as info:
        _installer(ShellWithPath(str(tmp_path / "bin")), tmp_path).probe()
    assert info.value.title == "No Python on the host"
    assert "python3" in info.value.message and "3.8" in info.value.message


def test_python3_too_old(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "python3"  # a real executable that reports itself as Python 3.6, as an old host would
    fake.write_text('#!/bin/sh\necho \'{"python": "3.6.9", "home": "/", "bundle": "b", "socket": "s"}\'\n')
    fake.chmod(0o755)
    with pytest.raises(AgentInstallError) as info:
        _installer(ShellWithPath(str(bindir)), tmp_path).probe()
    assert "3.6.9" in info.value.message and "too old" in info.value.title
