"""What the engine needs from a host, whatever carries it: run a command, put a file.

`LocalShell` does it on this computer; `remote.ssh_shell.SshShell` does it over SSH. Both are blocking
and run on the host's worker thread, never on the event loop.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class ExecResult:
    exit_status: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def error_text(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


class HostShell(Protocol):
    """Blocking access to a host. `cmd` is a POSIX shell command line."""

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0) -> ExecResult: ...

    def put_file(self, data: bytes, remote_path: str, *, mode: int = 0o600) -> int:
        """Write `data` to `remote_path` (created with `mode`); returns bytes sent."""
        ...

    def close(self) -> None: ...


class LocalShell:
    """This computer as a host."""

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0) -> ExecResult:
        proc = subprocess.run(
            ["/bin/sh", "-c", cmd], input=input, capture_output=True, timeout=timeout, check=False
        )
        return ExecResult(proc.returncode, proc.stdout, proc.stderr)

    def put_file(self, data: bytes, remote_path: str, *, mode: int = 0o600) -> int:
        path = Path(os.path.expanduser(remote_path))
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".put-")
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return len(data)

    def close(self) -> None:
        return None
