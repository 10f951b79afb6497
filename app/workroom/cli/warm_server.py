"""The warm starter (docs/cli.md, "Warm start"; the command's side is cli/warm.py), run by a command as
`python -P -c "... warm_server.main()"` from `/`.

It imports what a command without the app imports (asyncio, paramiko, pydantic, the engine, the command's
modules), then listens on the home's `warm.sock` and, for each command, forks: the fork takes the command's
folder, environment and umask, runs it as a command without the app runs it (its own engine, the files read as
they are now) and says what it prints through the app link's frames. The starter itself holds no engine, no
connection, no host and no secret, and does nothing but accept and fork: a command's fork is the only thing that
reaches a host, as the command itself would have.

It ends after `IDLE_SECONDS` unused or `MAX_LIFE_SECONDS` in all, at SIGTERM, when a fork finds a command of other
code than its own (`warm.code_identity`) or is asked to by `workroom app quit` (the fork signals its parent, the
starter, whose pid it took at the fork), or when its own code or libraries on disk are no longer those it
imported (that command is refused and runs itself; the next one leaves a new starter). One per home:
`warm.lock`, flocked, holds its pid.
"""

from __future__ import annotations

import io
import os
import socket
import sys

from workroom import app_link
from workroom.cli.warm import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio

PRELOAD = ("asyncio", "json", "argparse", "workroom.cli.face", "workroom.cli.parser", "workroom.cli.reach",
           "workroom.cli.hosts", "workroom.cli.settings", "workroom.cli.words", "workroom.sessions.engine",
           "workroom.storage", "workroom.agent_bundle", "workroom.remote.ssh_connection", "workroom.remote.ssh_auth",
           "workroom.remote.ssh_transport", "workroom.remote.host_keys", "workroom.remote.ssh_errors")
"""What a command without the app imports before it can do anything (what the fork no longer pays)."""
LIBRARIES = ("asyncio", "paramiko", "cryptography", "nacl", "bcrypt", "pydantic", "pydantic_core", "annotated_types",
             "typing_extensions")
"""The libraries it imported whose files an upgrade replaces (checked with the app's own before each fork)."""
MAX_LIFE_SECONDS = 12 * 3600.0
"""However busy, a starter ends after this: what it imported ages no further than a working day."""
BUG_WORDS = ("workroom: the command could not run (a bug); `WORKROOM_WARM=0 workroom ...` runs it without the "
             "starter and shows why.")


def code_files() -> list[str]:
    """Each module file of the app's package, and the first file of each of `LIBRARIES` as this interpreter finds
    it (found, not imported: read before the imports, an upgrade during them is a change)."""
    import importlib.util

    import workroom

    paths: list[str] = []
    root = os.path.dirname(os.path.abspath(workroom.__file__))
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        paths.extend(os.path.join(folder, name) for name in sorted(files) if name.endswith(".py"))
    for name in LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and os.path.isabs(spec.origin):
            paths.append(spec.origin)
    return paths


def code_snapshot(paths: list[str]) -> tuple[tuple[str, int, int], ...]:
    """Each of `paths` with its size and modification time: a starter whose code changed on disk (an upgrade, an
    edit) must not run the next command with the code it imported before."""
    found: list[tuple[str, int, int]] = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            found.append((path, -1, -1))
            continue
        found.append((path, info.st_size, info.st_mtime_ns))
    return tuple(found)


def main(package_parent: str | None = None) -> int:
    """The starter (`package_parent`: the folder the command's package came from; a starter that imported another
    copy ends at once)."""
    import fcntl
    import gc
    import signal

    from workroom.cli import warm

    path = warm.socket_path()
    if not warm.enabled() or path is None:
        return 0
    if package_parent is not None and os.path.realpath(package_parent) != os.path.realpath(warm.package_parent()):
        return 0
    lock = os.open(os.path.join(os.path.dirname(path), warm.LOCK_NAME),
                   os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another starter serves this home
        os.close(lock)
        return 0
    os.ftruncate(lock, 0)
    os.pwrite(lock, b"%d\n" % os.getpid(), 0)  # at once: a killed starter's pid must not pass for this one's
    files = code_files()
    code = code_snapshot(files)  # before the imports: an upgrade during them is a change
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)  # a starter's that was killed outright (we hold the lock: no live one listens there)
    except FileNotFoundError:
        pass
    try:  # bound before the imports (a folder that holds no socket costs nothing), listening after them
        listener.bind(path)
        os.chmod(path, 0o600)
        inode = os.stat(path).st_ino
    except OSError:
        os.close(lock)
        return 0
    gc.disable()
    _preload()
    listener.listen(16)
    gc.collect()
    gc.freeze()  # what the forks share stays shared (the collector would touch every page of it)
    gc.enable()

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forks are reaped as they end
    try:
        _serve(listener, lock, files, code, warm.idle_seconds(), _clock() + MAX_LIFE_SECONDS)
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


def _clock() -> float:
    """Seconds that go on while the computer sleeps (Linux's boot time; elsewhere the wall clock): a laptop's
    starter must not outlive its limits by every night it slept through."""
    import time

    boot = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boot) if boot is not None else time.time()


def _serve(listener: socket.socket, lock: int, files: list[str], code: tuple[tuple[str, int, int], ...],
           idle: float, end_of_life: float) -> None:
    import select

    used = _clock()
    while True:
        now = _clock()
        left = min(end_of_life, used + idle) - now
        if left <= 0:
            return
        ready, _, _ = select.select([listener], [], [], min(left, 60.0))  # looked at again after a sleep
        if not ready:
            continue
        used = _clock()
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        uid = app_link.peer_uid(conn)
        if uid is not None and uid != os.getuid():
            conn.close()
            continue
        stale = code_snapshot(files) != code
        starter = os.getpid()
        pid = os.fork()
        if pid == 0:
            _fork(conn, listener, lock, stale, starter)
        conn.close()
        if stale:
            return


def _fork(conn: socket.socket, listener: socket.socket, lock: int, stale: bool, starter: int) -> None:
    """The fork for one request: never returns. It ends with `os._exit` once its answer is sent: a command the
    person gave up on (Ctrl-C) is not waited for in the loop's threads (a keyring prompt, a connect under way)."""
    import signal

    code = app_link.EXIT_ERROR
    try:
        listener.close()
        os.close(lock)
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import asyncio

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        code = loop.run_until_complete(_request(conn, stale, starter))
    except BaseException:  # the fork must end here, whatever happened
        code = app_link.EXIT_ERROR
    finally:
        os._exit(code)


def _end_starter(starter: int) -> None:
    """Signal the starter to end: the fork's parent, while it still is (a fork whose parent has gone has another
    parent now, and signals nobody)."""
    import signal

    if os.getppid() == starter:
        try:
            os.kill(starter, signal.SIGTERM)
        except OSError:
            pass


async def _request(conn: socket.socket, stale: bool, starter: int) -> int:
    import asyncio

    from workroom import __version__
    from workroom.cli import warm

    reader, writer = await asyncio.open_unix_connection(sock=conn)
    try:
        header = await asyncio.wait_for(reader.readline(), app_link.HELLO_SECONDS)
        parts = header.split()
        if parts[:2] == [warm.QUIT_HEADER, b"%d" % warm.WARM_VERSION]:
            writer.write(app_link.frame(app_link.HELLO, b"%d" % starter))
            await writer.drain()
            _end_starter(starter)
            return 0
        body = None
        if parts[:1] == [warm.HEADER] and parts[1:2] != [b"%d" % warm.WARM_VERSION]:
            _end_starter(starter)  # a command of another version: it runs itself and leaves a starter of its own
        elif (not stale and len(parts) == 4 and parts[0] == warm.HEADER and parts[3].isdigit()
                and int(parts[3]) <= warm.MAX_REQUEST_BYTES):
            body = warm.read_body(await asyncio.wait_for(reader.readexactly(int(parts[3])), app_link.HELLO_SECONDS))
        if body is not None and body.code != warm.code_identity():  # another interpreter, copy or mount namespace
            _end_starter(starter)  # the command runs itself and leaves a starter of its own code
            body = None
        if body is not None and not _take(body):
            body = None
        if body is None:  # the command runs itself (cli/warm.py)
            writer.write(app_link.frame(app_link.REFUSED, b"not here"))
            await writer.drain()
            return app_link.EXIT_ERROR
        writer.write(app_link.frame(app_link.HELLO, b"link=%d version=%s pid=%d" % (
            app_link.LINK_VERSION, __version__.encode(), os.getpid())))
        go = await asyncio.wait_for(reader.readexactly(5), app_link.HELLO_SECONDS)
        if go != app_link.frame(warm.GO):
            return app_link.EXIT_ERROR
    except (TimeoutError, asyncio.IncompleteReadError, OSError, ValueError):  # it gave up: it runs the command
        return app_link.EXIT_ERROR
    return await _command(body, reader, writer)


def _take(body: Request) -> bool:
    """Take the command's surroundings before anything reads them: its folder (False when this process cannot enter
    it: the command runs itself), its environment, umask and time zone."""
    import time

    try:
        os.chdir(body.cwd)
    except OSError:
        return False
    os.umask(body.umask)
    os.environ.clear()
    os.environ.update(body.environ)
    time.tzset()
    return True


async def _command(body: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
    import asyncio

    from workroom import cli

    term = app_link.LinkTerminal(writer, body.cwd, body.stdin_tty)
    loop = asyncio.get_running_loop()
    # What the command would print on its own stdout and stderr without going through its terminal (Python's
    # last-resort log handler, a `warnings` message, an exception in a thread) goes to the command's, in order.
    sys.stdout = _LinkStream(loop, term, app_link.OUT)
    sys.stderr = _LinkStream(loop, term, app_link.ERR)
    result: list[int] = []

    async def run(args: list[str], link: app_link.LinkTerminal) -> int:
        result.append(await cli.serve(args, link, None, bug_words=BUG_WORDS))
        return result[0]

    await app_link.serve_command(term, body.argv, reader, run)
    return result[0] if result else app_link.EXIT_INTERRUPTED


class _LinkStream(io.TextIOBase):
    """The fork's sys.stdout or sys.stderr: text written to it goes to the command's stdout or stderr through the
    link, written at once on the loop's thread, handed to the loop from any other (the link is the loop's)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, term: app_link.LinkTerminal, tag: bytes) -> None:
        super().__init__()
        self.loop, self.term, self.tag = loop, term, tag

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        import asyncio

        if not text:
            return 0
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.term.write(self.tag, text)
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.term.write, self.tag, text)
        return len(text)


if __name__ == "__main__":
    sys.exit(main())
