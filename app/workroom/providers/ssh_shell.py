"""The SSH side of a provider reached over SSH (providers/ssh_family.py): a `HostShell` over one connection, and a
stream shaped as the agent link reads it. Loaded with the first connection, never by a look (cli/look.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workroom.remote.answer_limit import COMMAND_ANSWER, AnswerLimit
from workroom.remote.host_shell import ExecResult

if TYPE_CHECKING:  # paramiko loads with the first SSH connection (docs/architecture.md, start-up)
    from workroom.remote.ssh_connection import ExecStream, SocketStream, SshConnection


class SshShell:
    """HostShell over one SSH connection."""

    def __init__(self, connection: SshConnection) -> None:
        self.connection = connection

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0,
            limit: AnswerLimit = COMMAND_ANSWER) -> ExecResult:
        result = self.connection.exec(cmd, input=input, timeout=timeout, limit=limit)
        return ExecResult(result.exit_status, result.stdout, result.stderr)

    def put_file(self, data: bytes, remote_path: str, *, mode: int = 0o600) -> int:
        return self.connection.sftp_put(data, remote_path, mode=mode)

    def close(self) -> None:
        self.connection.close()


class StreamAdapter:
    """ExecStream (or SocketStream) shaped as the BlockingStream that agent_link reads: a stream that ended
    badly raises its own `UserError` (title, words and hint), never a bare exception built from its message."""

    def __init__(self, stream: ExecStream | SocketStream) -> None:
        self._stream = stream

    def recv(self, nbytes: int) -> bytes:
        data = self._stream.recv(nbytes)
        if not data:
            error = self._stream.end_error()
            if error is not None:
                raise error
        return data

    def sendall(self, data: bytes) -> None:
        self._stream.send(data)

    def close(self) -> None:
        self._stream.close()
