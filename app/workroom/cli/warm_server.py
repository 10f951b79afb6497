"""The warm starter: `python -m workroom.cli.warm_server` (docs/cli.md, "Warm start"; the command's side is
cli/warm.py).

It imports what a command without the app imports (asyncio, paramiko, pydantic, the engine, the command's
modules), then listens on the home's `warm.sock` and, for each command, forks: the fork takes the command's
folder, environment and umask, runs it as a command without the app runs it (its own engine, the files read as
they are now) and says what it prints through the app link's frames. The starter itself holds no engine, no
connection, no host and no secret, and runs nothing but `fork`: a command's fork is the only thing that reaches a
host, as the command itself would have.

It ends after `IDLE_SECONDS` unused, at SIGTERM (`workroom app quit`), or when the app's code on disk is no longer
the code it imported (that command is refused and runs itself; the next one starts a new starter). One per home:
`warm.lock`, flocked, holds its pid.
"""

from __future__ import annotations

import logging
import os
import socket
import sys

from workroom import app_link

PRELOAD = ("asyncio", "json", "argparse", "workroom.cli.face", "workroom.cli.parser", "workroom.cli.reach",
           "workroom.cli.hosts", "workroom.cli.settings", "workroom.cli.words", "workroom.sessions.engine",
           "workroom.storage", "workroom.agent_bundle", "workroom.remote.ssh_connection", "workroom.remote.ssh_auth",
           "workroom.remote.ssh_transport", "workroom.remote.host_keys", "workroom.remote.ssh_errors")
"""What a command without the app imports before it can do anything (what the fork no longer pays)."""
BUG_WORDS = ("workroom: the command could not run (a bug); `WORKROOM_WARM=0 workroom ...` runs it without the "
             "starter and shows why.")


def code_snapshot() -> tuple[tuple[str, int, int], ...]:
    """Each module file of the app's package, with its size and modification time: a starter whose code changed
    on disk (an upgrade, an edit) must not run the next command with the code it imported before."""
    import workroom

    root = os.path.dirname(os.path.abspath(workroom.__file__))
    found: list[tuple[str, int, int]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                found.append((path, info.st_size, info.st_mtime_ns))
    return tuple(found)


def main() -> int:
    import fcntl
    import gc
    import signal

    from workroom.cli import warm

    where = warm.folder()
    if not warm.enabled() or not app_link._private(where):
        return 0
    lock = os.open(os.path.join(where, warm.LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another starter serves this home
        os.close(lock)
        return 0
    os.ftruncate(lock, 0)
    os.pwrite(lock, b"%d\n" % os.getpid(), 0)  # at once: a killed starter's pid must not outlive its lock
    gc.disable()
    _preload()
    code = code_snapshot()
    path = os.path.join(where, warm.SOCKET_NAME)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)  # a starter's that was killed outright (we hold the lock: no live one listens there)
    except FileNotFoundError:
        pass
    listener.bind(path)
    listener.listen(16)
    inode = os.stat(path).st_ino
    gc.collect()
    gc.freeze()  # what the forks share stays shared (the collector would touch every page of it)
    gc.enable()

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forks are reaped as they end
    try:
        _serve(listener, lock, code, warm.idle_seconds())
    finally:
        try:
            if os.stat(path).st_ino == inode:
                os.unlink(path)
        except OSError:
            pass
        os.ftruncate(lock, 0)
        os.close(lock)
    return 0


def _preload() -> None:
    import importlib

    from workroom.pydantic_plugins import skip_pydantic_plugins

    skip_pydantic_plugins()
    for name in PRELOAD:
        importlib.import_module(name)
    from workroom.cli import _app_parser

    _app_parser()


def _serve(listener: socket.socket, lock: int, code: tuple[tuple[str, int, int], ...], idle: float) -> None:
    import select

    while True:
        ready, _, _ = select.select([listener], [], [], idle)
        if not ready:
            return
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        uid = app_link.peer_uid(conn)
        if uid is not None and uid != os.getuid():
            conn.close()
            continue
        stale = code_snapshot() != code
        pid = os.fork()
        if pid == 0:
            _fork(conn, listener, lock, stale)
        conn.close()
        if stale:
            return


def _fork(conn: socket.socket, listener: socket.socket, lock: int, stale: bool) -> None:
    """The fork for one command: never returns."""
    import signal

    code = app_link.EXIT_ERROR
    try:
        listener.close()
        os.close(lock)
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import asyncio

        code = asyncio.run(_command(conn, stale))
    except BaseException:  # the fork must end here, whatever happened
        code = app_link.EXIT_ERROR
    finally:
        os._exit(code)


async def _command(conn: socket.socket, stale: bool) -> int:
    import asyncio

    from workroom import __version__, cli
    from workroom.cli import warm

    reader, writer = await asyncio.open_unix_connection(sock=conn)
    try:
        header = await asyncio.wait_for(reader.readline(), app_link.HELLO_SECONDS)
        parts = header.split()
        body = None
        if (not stale and len(parts) == 4 and parts[0] == warm.HEADER and parts[1] == b"%d" % warm.WARM_VERSION
                and parts[3].isdigit() and int(parts[3]) <= warm.MAX_REQUEST_BYTES):
            body = warm.read_body(await asyncio.wait_for(reader.readexactly(int(parts[3])), app_link.HELLO_SECONDS))
        if body is not None and body.code != warm.code_identity():  # another interpreter, or another copy
            body, stale = None, True
        if body is None:  # the command runs itself (cli/warm.py)
            writer.write(app_link.frame(app_link.REFUSED, b"other code" if stale else b"unreadable"))
            await writer.drain()
            return app_link.EXIT_ERROR
        writer.write(app_link.frame(app_link.HELLO, b"link=%d version=%s pid=%d" % (
            app_link.LINK_VERSION, __version__.encode(), os.getpid())))
        go = await asyncio.wait_for(reader.readexactly(5), app_link.HELLO_SECONDS)
        if go != app_link.frame(warm.GO):
            return app_link.EXIT_ERROR
    except (TimeoutError, asyncio.IncompleteReadError, OSError, ValueError):  # it gave up: it runs the command
        return app_link.EXIT_ERROR
    cwd, tty, umask, _, environ, argv = body
    os.umask(umask)
    os.environ.clear()
    os.environ.update(environ)
    import time

    time.tzset()  # its TZ, for the times it prints
    try:
        os.chdir(cwd)
    except OSError:  # the command's folder is gone: it is still its cwd (relative paths are read against it)
        pass
    term = app_link.LinkTerminal(writer, cwd, tty)
    logging.getLogger().addHandler(_WarningsSaid(term))
    result: list[int] = []

    async def run(args: list[str], link: app_link.LinkTerminal) -> int:
        result.append(await cli.serve(args, link, None, bug_words=BUG_WORDS))
        return result[0]

    await app_link.serve_command(term, argv, reader, run)
    return result[0] if result else app_link.EXIT_INTERRUPTED


class _WarningsSaid(logging.Handler):
    """What a command without the app shows of its log (Python's last-resort handler: warnings and worse, on
    stderr), said on the command's stderr through the link: the message, as that handler prints it."""

    def __init__(self, term: app_link.LinkTerminal) -> None:
        super().__init__(logging.WARNING)
        self.term = term

    def emit(self, record: logging.LogRecord) -> None:
        self.term.err(record.getMessage())


if __name__ == "__main__":
    sys.exit(main())
