"""One way every provider runs a platform's command line (`boxd`, `coder`, `gh`): bounded in time and in what it
may answer, never on the GUI thread (a subprocess awaited on the loop), and never a traceback.

A CLI that is not installed, hangs (a login prompt, a network stall), or floods its answer is a `CliProblem` in
words; its process group is killed past the deadline. stdin is closed, so a CLI that would prompt fails at once
instead of waiting for a person who is not there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from dataclasses import dataclass

from workroom.core.host_text import plain
from workroom.remote.host_shell import ExecResult

CLI_ANSWER_BYTES = 1024 * 1024
"""A list of a few hundred workspaces is well under this; more is not an answer worth parsing."""
STDERR_BYTES = 16 * 1024


@dataclass(frozen=True)
class CliAnswer(ExecResult):
    """A command's answer (remote.host_shell's, here from this computer), and what it said in one line."""

    def said(self, limit: int = 300) -> str:
        """What the CLI said on stderr (else stdout), as one plain line, cut."""
        text = (self.stderr or self.stdout).decode("utf-8", errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return plain(" ".join(lines), limit) if lines else f"it exited with status {self.exit_status}"


class CliProblem(Exception):
    """The command could not be asked at all: not installed, no answer in time, an answer too large."""

    def __init__(self, words: str) -> None:
        super().__init__(words)
        self.words = words


async def run_cli(argv: list[str], *, timeout: float, limit: int = CLI_ANSWER_BYTES,
                  env: dict[str, str] | None = None) -> CliAnswer:
    """Run `argv` (its first word looked up on PATH) and wait at most `timeout` seconds for it to end."""
    exe = shutil.which(argv[0])
    if exe is None:
        raise CliProblem(f"`{argv[0]}` is not installed (not found on PATH)")
    try:
        proc = await asyncio.create_subprocess_exec(
            exe, *argv[1:], stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,
            env=None if env is None else {**os.environ, **env})
    except OSError as error:
        raise CliProblem(f"`{argv[0]}` could not be started ({plain(str(error), 200)})") from None

    async def read(stream: asyncio.StreamReader | None, cap: int) -> bytes:
        got = b""
        while stream is not None and len(got) <= cap:
            chunk = await stream.read(cap + 1 - len(got))
            if not chunk:
                break
            got += chunk
        return got

    try:
        out, err = await asyncio.wait_for(asyncio.gather(read(proc.stdout, limit), read(proc.stderr, STDERR_BYTES)),
                                          timeout)
        if len(out) > limit:
            raise CliProblem(f"`{argv[0]}` answered more than {limit // 1024} KiB")
        code = await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        raise CliProblem(f"`{argv[0]} {argv[1] if len(argv) > 1 else ''}`".replace(" `", "`")
                         + f" gave no answer within {timeout:g} s") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    return CliAnswer(code, out, err[:STDERR_BYTES])
