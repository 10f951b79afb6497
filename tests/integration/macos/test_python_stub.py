"""A Mac host whose `python3` is Apple's placeholder gets a plain answer, not "could not read the host".

No Mac here: the placeholder is stood in for by an executable that prints what Apple's /usr/bin/python3
prints without the Command Line Tools and exits 1, run through this computer's real /bin/sh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from workroom.agent_bundle import AgentBundle
from workroom.remote.agent_install import AgentInstaller, AgentInstallError, AgentLayout, ServeOptions
from workroom.remote.host_shell import ExecResult, LocalShell
from wr_agent import bundle

pytestmark = pytest.mark.integration

STUB_OUTPUT = (
    "xcode-select: note: No developer tools were found, requesting install.\n"
    "If developer tools are located at a non-default location on disk, use `sudo xcode-select --switch "
    "path/to/Xcode.app` to specify the Xcode that you wish to use for command line developer tools, and "
    "cancel the installation dialog.\nSee `man xcode-select` for more details.\n"
)


class ShellWithPath(LocalShell):
    def __init__(self, path: str) -> None:
        self.path = path

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0, **kw: Any) -> ExecResult:
        return super().run(f"PATH={self.path}; export PATH; {cmd}", input=input, timeout=timeout, **kw)


def test_apples_python3_placeholder_is_named(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "python3"
    stub.write_text(f"#!/bin/sh\ncat >/dev/null\nprintf '%s' '{STUB_OUTPUT}' >&2\nexit 1\n")
    stub.chmod(0o755)
    layout = AgentLayout(install_dir=str(tmp_path / "agent"), state_dir=str(tmp_path / "run"))
    installer = AgentInstaller(ShellWithPath(f"{bindir}:/usr/bin:/bin"),
                               AgentBundle(bundle.bundle_bytes(), "0" * 64, "0.1.0"),
                               layout, ServeOptions(workroom="w"))
    with pytest.raises(AgentInstallError) as info:
        installer.probe()
    assert info.value.title == "Python on the host is only Apple's placeholder"
    assert "xcode-select --install" in info.value.hint
