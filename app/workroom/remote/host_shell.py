"""What the engine needs from a host, whatever carries it: run a command, put a file.

`LocalShell` does it on this computer; `providers.ssh_shell.SshShell` does it over SSH. Both are blocking
and run on the host's worker thread, never on the event loop, and both fail a command past its time limit
the same way: `CommandTimedOut`, in plain words.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from workroom.core.host_text import plain
from workroom.remote.answer_limit import COMMAND_ANSWER, AnswerLimit
from workroom.remote.ssh_errors import CommandTimedOut, logged_command


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

    def said(self, limit: int = 300) -> str:
        """The error output as words for a message: host-supplied, so plain text and at most `limit` long."""
        return plain(self.error_text(), limit)


class HostShell(Protocol):
    """Blocking access to a host. `cmd` is a POSIX shell command line."""

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0,
            limit: AnswerLimit = COMMAND_ANSWER) -> ExecResult:
        """Past `limit` on stdout or stderr the command is abandoned: `AnswerTooLarge`."""
        ...

    def put_file(self, data: bytes, remote_path: str, *, mode: int = 0o600) -> int:
        """Write `data` to `remote_path` (created with `mode`); returns bytes sent."""
        ...

    def close(self) -> None: ...


class LocalShell:
    """This computer as a host.

    Each command runs in a session (and process group) of its own, so a command past its time limit is
    stopped whole, with every process it started that is still in its group; a daemon that left the group
    on purpose (the agent's `--detach`) is not touched. A command never reads the app's own stdin.
    """

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0,
            limit: AnswerLimit = COMMAND_ANSWER) -> ExecResult:
        with subprocess.Popen(
            ["/bin/sh", "-c", cmd],
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        ) as proc:
            try:
                out, err, finished = _communicate(proc, input, time.monotonic() + timeout, limit.max_bytes)
            except BaseException:
                _stop_group(proc)
                raise
            if finished is None:
                _stop_group(proc)
                raise limit.exceeded(cmd)
            if not finished:
                _stop_group(proc)
                logged_command(cmd)
                raise CommandTimedOut(
                    "Command timed out",
                    f"A command the app ran on this computer did not finish within {timeout:g} s, and was stopped.",
                    "This computer may be very busy; try again.",
                )
            proc.wait()
        return ExecResult(proc.returncode, out, err)

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


def _communicate(proc: subprocess.Popen[bytes], input: bytes | None, deadline: float,
                 max_bytes: int) -> tuple[bytes, bytes, bool | None]:
    """(stdout, stderr, True) once both pipes end; False at `deadline`; None past `max_bytes` on either."""
    assert proc.stdout is not None and proc.stderr is not None
    outputs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    pending = memoryview(input or b"")
    with selectors.DefaultSelector() as sel:
        for fd in outputs:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            if pending:
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        try:
            while len(sel.get_map()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return bytes(outputs[proc.stdout.fileno()]), bytes(outputs[proc.stderr.fileno()]), False
                for key, _ in sel.select(left):
                    fd = int(key.fd)
                    if fd in outputs:
                        try:
                            chunk = os.read(fd, 65536)
                        except BlockingIOError:
                            continue
                        if not chunk:
                            sel.unregister(fd)
                            continue
                        outputs[fd] += chunk
                        if len(outputs[fd]) > max_bytes:
                            return b"", b"", None
                    else:
                        try:
                            pending = pending[os.write(fd, pending):]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = memoryview(b"")
                        if not pending:
                            sel.unregister(fd)
                            assert proc.stdin is not None
                            proc.stdin.close()
        finally:
            if proc.stdin is not None and not proc.stdin.closed:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
    return bytes(outputs[proc.stdout.fileno()]), bytes(outputs[proc.stderr.fileno()]), True


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command's process group (its shell and what the shell started) and reap the shell. The
    output pipes are not read again: a process that left the group may still hold them open."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the group's id is the shell's pid (start_new_session)
    proc.wait()
