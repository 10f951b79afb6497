"""The `workroom` command's link to the running app: while the app runs, every command goes through it.

The app's engine owns the hosts, the settings, the connections and what is known of each host; a command that
ran an engine of its own beside it opened SSH connections of its own and wrote files the app then wrote over. So
the command finds the running app on its single-instance socket, sends its arguments, and prints what the app
answers: the app runs the very same command (`workroom.cli.serve`) against its own engine, so the words and the
`--json` are the same as without the app.

This side is on the path of every command, so it imports next to nothing: the C socket module, no json, no
pathlib, no pydantic or paramiko; a command through the app costs a Python start and one round trip. The wire
(docs/app_link.md) is a header line, then length-prefixed frames. The app's side is here too (`serve_link`,
`LinkTerminal`); it imports asyncio only when it serves.
"""

from __future__ import annotations

import _socket
import os
import sys

from workroom import __version__

TYPE_CHECKING = False  # not `typing`'s: this module is on the path of every command (cli/__init__.py)
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable
    from typing import Any

LINK_VERSION = 1
"""The version of this wire. A request of another version is refused, saying which side is older; the header line,
the hello frame and the refusal frame keep their form in every version, so either side can say so."""
SOCKET_NAME = "app.sock"
LOCK_NAME = "app.lock"
HEADER = b"workroom-command"
"""The first word of a command's request (a later launch of the app sends `show` instead)."""
MAX_REQUEST_BYTES = 64 * 1024
MAX_ARGS = 256
MAX_ARG_BYTES = 4096
MAX_FRAME_BYTES = 8 * 1024 * 1024
"""One frame of the app's answer (a week of `why --json` is well under it)."""
MAX_REPLY_BYTES = 64 * 1024
"""The person's answer to a question the app asked through the command."""
MAX_UNSENT_BYTES = 16 * 1024 * 1024
"""What the app holds for a command that does not read its answer (a `status --watch` piped into a stopped
program): past it the command is ended."""
SLOW_READER_SECONDS = 10.0
"""How long the app waits on a command that reads nothing of what is waiting for it (past 64 KiB unread, or its
last frames): then it is ended. The app never waits on a reader longer."""
SLOW_READER_BYTES = 64 * 1024
MAX_CLIENTS = 32
"""Commands the app serves at once (a request read, its command running). One more is answered BUSY at once,
never queued: a look then runs in the command itself (it reaches no box either way), anything else is refused."""
MAX_WAITING = 256
"""Connections whose request line has not come yet (each for at most REQUEST_SECONDS), counted apart from the
commands: idle connections never take a command's place, so a person's command still goes through a flood of
them. One more is answered BUSY at once."""
REQUEST_SECONDS = 2.0
"""How long a connection may take to send its request line (a launch's `show`, a command's header)."""
ASK_SECONDS = 600.0
"""How long a question relayed to a command (a passphrase) waits for its answer: then it is taken as no answer."""
EXIT_BUSY = 75
"""The app serves as many commands as it takes (EX_TEMPFAIL: try again)."""
HELLO_SECONDS = 5.0
STARTING_SECONDS = 5.0
"""How long a command waits for an app that holds this home's lock but does not listen yet (it is starting)."""
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
QUITTING = ("app", "quit")
"""The one command whose answer ends with the app itself (its connection closes when the process ends)."""

# Frames: a tag byte, the payload's length (4 bytes, big-endian), the payload.
HELLO = b"H"  # app -> command, first: "link=1 version=0.1.0 pid=123"
REFUSED = b"R"  # app -> command, instead of running it: why, in words (then EXIT)
OUT = b"O"  # app -> command: what the command prints on stdout (UTF-8, newlines included)
ERR = b"E"  # app -> command: what it prints on stderr
ASK = b"A"  # app -> command: a question for the person (the prompt); SECRET: one not echoed
SECRET = b"S"
EXIT = b"X"  # app -> command, last: the exit code in decimal
BUSY = b"B"  # app -> command, after HELLO: it serves MAX_CLIENTS already (why, in words; then EXIT)
ANSWER = b"a"  # command -> app: the person's answer (UTF-8); NO_ANSWER: end of input
NO_ANSWER = b"n"


class LinkError(Exception):
    """The app is there but the command cannot go through it: why, in words for the person."""


def frame(tag: bytes, payload: bytes = b"") -> bytes:
    return tag + len(payload).to_bytes(4, "big") + payload


# -- finding the app --------------------------------------------------------------------------------------------


def guessed_folder(environ: os._Environ[str] | dict[str, str]) -> str:
    """Where this home's app listens, worked out with os.path alone (`paths.app_paths` and `single_instance.
    instance_folder` say it exactly, with platformdirs): a wrong guess costs only the exact look after it."""
    home = environ.get("WORKROOM_HOME", "").strip()
    if home:
        root = os.path.expanduser(home)
        return os.path.join(root if os.path.isabs(root) else os.path.join(os.getcwd(), root), "runtime")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/TemporaryItems/workroom")
    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime:
        return os.path.join(runtime, "workroom")
    cache = environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
    return os.path.join(cache, "workroom", "run")


def _exact_folder() -> str:
    from workroom.paths import agent_socket_dir, app_paths

    return str(agent_socket_dir(app_paths().runtime_dir))


def _private(folder: str) -> bool:
    """A real folder of this user's that nobody else can enter (as `paths.check_private_dir` judges it)."""
    import stat

    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not stat.S_IMODE(info.st_mode) & 0o077


def _holder_alive(folder: str) -> bool:
    """Whether the process named in the folder's lock file still runs (the app writes its pid there)."""
    return holder_pid(folder, LOCK_NAME) is not None


def holder_pid(folder: str, lock_name: str) -> int | None:
    """The pid a live process wrote into its lock file in `folder` (None: none, or it no longer runs)."""
    try:
        fd = os.open(os.path.join(folder, lock_name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            pid = int(os.read(fd, 32).strip() or b"0")
        finally:
            os.close(fd)
        if pid <= 0:
            return None
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def _dial(path: str) -> _socket.socket | None:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def peer_uid(sock: Any) -> int | None:
    """The uid of the process on the other end of a Unix socket (SO_PEERCRED's ucred on Linux, LOCAL_PEERCRED's
    xucred on macOS: the uid follows a 4-byte field in both), or None where the platform cannot tell."""
    so_peercred = getattr(_socket, "SO_PEERCRED", None)
    if so_peercred is not None:
        raw = sock.getsockopt(_socket.SOL_SOCKET, so_peercred, 12)
    elif sys.platform == "darwin":
        raw = sock.getsockopt(0, 0x001, 76 + 8)  # SOL_LOCAL, LOCAL_PEERCRED: struct xucred
    else:
        return None
    return int.from_bytes(raw[4:8], sys.byteorder)


def peer_pid(sock: Any) -> int | None:
    """The pid of the process on the other end of a Unix socket (SO_PEERCRED on Linux, LOCAL_PEERPID on macOS),
    or None where the platform cannot tell."""
    so_peercred = getattr(_socket, "SO_PEERCRED", None)
    try:
        if so_peercred is not None:
            return int.from_bytes(sock.getsockopt(_socket.SOL_SOCKET, so_peercred, 12)[0:4], sys.byteorder) or None
        if sys.platform == "darwin":
            return int.from_bytes(sock.getsockopt(0, 0x002, 4), sys.byteorder) or None  # SOL_LOCAL, LOCAL_PEERPID
    except OSError:
        return None
    return None


def connect(environ: os._Environ[str] | dict[str, str] | None = None) -> _socket.socket | None:
    """A connection to this home's running app, its peer checked to be this user; None when no app runs here
    (no socket, or a crashed app's). An app that holds the home but does not listen yet is waited for; one that
    never listens is a LinkError."""
    env = os.environ if environ is None else environ
    folders = [guessed_folder(env)]
    for folder in folders:
        path = os.path.join(folder, SOCKET_NAME)
        sock = _dial(path) if _private(folder) else None
        if sock is None and _private(folder) and _holder_alive(folder):
            import time

            deadline = time.monotonic() + STARTING_SECONDS
            while sock is None and time.monotonic() < deadline and _holder_alive(folder):
                time.sleep(0.05)
                sock = _dial(path)
            if sock is None and _holder_alive(folder):
                raise LinkError("Workroom is running for this home but does not answer. If it is stuck, quit it "
                                "(or end it with kill) and run the command again.")
        if sock is not None:
            uid = peer_uid(sock)
            if uid is not None and uid != os.getuid():
                sock.close()
                raise LinkError(f"The process listening at {path} is not yours (uid {uid}): nothing was sent.")
            return sock
        if len(folders) == 1 and environ is None:
            exact = _exact_folder()
            if exact != folder:
                folders.append(exact)
    return None


# -- the command's side ---------------------------------------------------------------------------------------


def request(argv: list[str], cwd: str | None = None, stdin_tty: bool | None = None) -> bytes:
    """The request: `workroom-command LINK VERSION LENGTH`, then LENGTH bytes of NUL-separated fields: the folder
    the command was typed in, "1" when its stdin is a terminal (else "0"), then its arguments."""
    fields = [os.getcwd() if cwd is None else cwd, "1" if (_isatty(sys.stdin) if stdin_tty is None else stdin_tty)
              else "0", *argv]
    body = b"\0".join(f.encode("utf-8", "surrogateescape") for f in fields)
    if (len(body) > MAX_REQUEST_BYTES or len(argv) > MAX_ARGS
            or any(len(a.encode("utf-8", "surrogateescape")) > MAX_ARG_BYTES for a in argv)):
        raise LinkError(f"The command is too long to send to the app (at most {MAX_ARGS} arguments of "
                        f"{MAX_ARG_BYTES} bytes).")
    return b"%s %d %s %d\n" % (HEADER, LINK_VERSION, __version__.encode(), len(body)) + body


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


def is_look(argv: list[str]) -> bool:
    """A command that only reads what is known and the providers' clocks (docs/cli.md, "A look is never a touch"),
    in its plain spellings: it runs the same in the command itself, so an app too busy to take it costs nothing."""
    return argv in (["status"], ["status", "--json"], ["hosts", "list"], ["hosts", "list", "--json"])


class _RunHere(Exception):
    """The app is too busy to take a look: the command runs it itself."""


def run_through_app(argv: list[str]) -> int | None:
    """Run `argv` in the running app and print its answer here; its exit code, or None when no app runs for this
    home, or it is too busy for a look (then the command runs here, as it always could)."""
    try:
        sock = connect()
        if sock is None:
            return None
        try:
            return _converse(sock, argv)
        finally:
            sock.close()
    except _RunHere:
        return None
    except LinkError as error:
        sys.stderr.write(f"workroom: {error}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `| head` stopped reading: nothing more to say there
        return EXIT_BROKEN_PIPE


class _Frames:
    """The app's frames, read from the socket with a bound on each."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _take(self, n: int) -> bytes | None:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                return None
            self.buffer += chunk
        taken, self.buffer = self.buffer[:n], self.buffer[n:]
        return taken

    def next(self) -> tuple[bytes, bytes] | None:
        head = self._take(5)
        if head is None:
            return None
        size = int.from_bytes(head[1:], "big")
        if size > MAX_FRAME_BYTES:
            raise LinkError("The app's answer was larger than this command takes.")
        payload = self._take(size)
        if payload is None:
            return None
        return head[:1], payload


def _converse(sock: _socket.socket, argv: list[str]) -> int:
    sock.sendall(request(argv))
    sock.settimeout(HELLO_SECONDS)
    frames = _Frames(sock)
    try:
        hello = frames.next()
    except TimeoutError:
        raise LinkError("Workroom is running for this home but did not answer in time.") from None
    except ConnectionResetError:
        hello = None
    sock.settimeout(None)
    if hello is None or hello[0] != HELLO:
        raise LinkError("The running Workroom app is an older version that does not take commands. Quit it (from "
                        "its menu) and open it again, then run the command again.")
    return converse_frames(sock, frames, argv)


def converse_frames(sock: _socket.socket, frames: _Frames, argv: list[str]) -> int:
    """Say what the command's frames say, answer its questions here, and give its exit code."""
    while True:
        message = frames.next()
        if message is None:
            if tuple(argv[:2]) == QUITTING:
                return 0
            raise LinkError("The Workroom app ended before it answered (see its log).")
        tag, payload = message
        if tag == OUT:
            _write(sys.stdout, payload)
        elif tag in (ERR, REFUSED):
            _write(sys.stderr, b"workroom: " + payload + b"\n" if tag == REFUSED else payload)
        elif tag == BUSY:
            if is_look(argv):
                raise _RunHere()
            _write(sys.stderr, b"workroom: " + payload + b"\n")
        elif tag in (ASK, SECRET):
            reply = ask_here(payload.decode("utf-8", "replace"), tag == SECRET)
            sock.sendall(frame(NO_ANSWER) if reply is None else
                         frame(ANSWER, reply.encode("utf-8", "surrogateescape")[:MAX_REPLY_BYTES]))
        elif tag == EXIT:
            try:
                code = int(payload)
            except ValueError:
                return EXIT_ERROR
            return code if 0 <= code < 256 else EXIT_ERROR


def _write(stream: Any, payload: bytes) -> None:
    """The app's bytes as they came (a stream in a test's hands may take only text)."""
    raw = getattr(stream, "buffer", None)
    if raw is not None:
        stream.flush()
        raw.write(payload)
        raw.flush()
    else:
        stream.write(payload.decode("utf-8", "replace"))
        stream.flush()


def ask_here(prompt: str, secret: bool = False) -> str | None:
    """A question for the person at this process's terminal (a passphrase, not echoed; a yes or no), or one line
    of stdin when it is not a terminal; None at end of input. The app's questions come here, and a command running
    without the app asks the same way (`cli.face.Here`)."""
    if secret and _isatty(sys.stdin):
        import getpass

        return getpass.getpass(prompt)
    if _isatty(sys.stdin):
        try:
            return input(prompt)
        except EOFError:
            return None
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


# -- the app's side -------------------------------------------------------------------------------------------


def is_request(line: bytes) -> bool:
    return line.startswith(HEADER + b" ")


_logged: set[str] = set()


def log_once(kind: str, message: str, *args: object) -> None:
    """A client's misbehaviour (a malformed frame, a slow reader, too many at once), logged the first time of each
    kind in a run: a flood of them must not flood the log."""
    if kind in _logged:
        return
    _logged.add(kind)
    import logging

    logging.getLogger(__name__).warning(message + " (said once a run)", *args)


def busy_answer() -> bytes:
    """The whole answer to a connection past MAX_CLIENTS: the hello, why, and EXIT_BUSY."""
    return (frame(HELLO, b"link=%d version=%s pid=%d" % (LINK_VERSION, __version__.encode(), os.getpid()))
            + frame(BUSY, (f"Workroom is answering {MAX_CLIENTS} commands at once and takes no more just now; "
                           "try again in a moment.").encode())
            + frame(EXIT, b"%d" % EXIT_BUSY))


class LinkTerminal:
    """A command's terminal when the app runs it: what it prints and asks goes to the `workroom` process that sent
    it, in order (`workroom.cli.Terminal`). Made on the link's thread, whose loop owns the connection; the command
    uses it from the app's loop, so what it says is handed to the link's loop (in order) and an answer to a
    question back to the loop that asked."""

    def __init__(self, writer: asyncio.StreamWriter, cwd: str, stdin_is_tty: bool) -> None:
        import asyncio
        import threading

        self._writer = writer
        self._link = asyncio.get_running_loop()
        self._ident = threading.get_ident
        self._link_thread = self._ident()
        self.cwd = cwd
        self.stdin_is_tty = stdin_is_tty
        self._asked: asyncio.Future[str | None] | None = None
        self._unread_since: float | None = None
        self.gone = False

    def out(self, text: str) -> None:
        self._send(OUT, text + "\n")

    def err(self, text: str) -> None:
        self._send(ERR, text + "\n")

    def write(self, tag: bytes, text: str) -> None:
        """Text as it was written (no newline added) to the command's stdout (`OUT`) or stderr (`ERR`)."""
        self._send(tag, text)

    async def ask(self, prompt: str, *, secret: bool = False) -> str | None:
        """The person's answer; None at the end of their input, or when none comes within ASK_SECONDS."""
        import asyncio

        self._asked = asyncio.get_running_loop().create_future()
        self._send(SECRET if secret else ASK, prompt)
        try:
            return await asyncio.wait_for(self._asked, ASK_SECONDS)
        except TimeoutError:
            log_once("unanswered", "a question relayed to a command had no answer in %.0f s: taken as none",
                     ASK_SECONDS)
            return None
        finally:
            self._asked = None

    def answered(self, reply: str | None) -> None:
        """The person's answer (on the link's thread), handed to the loop that asked."""
        asked = self._asked
        if asked is not None:
            try:
                asked.get_loop().call_soon_threadsafe(_settle, asked, reply)
            except RuntimeError:  # that loop has closed: nobody waits
                pass

    def _send(self, tag: bytes, text: str) -> None:
        if self.gone:  # dropped (a slow reader): nothing more is queued for it
            return
        if self._ident() == self._link_thread:
            self._send_here(tag, text)
            return
        try:
            self._link.call_soon_threadsafe(self._send_here, tag, text)
        except RuntimeError:  # the link has closed (the app is leaving): nobody reads
            pass

    def _send_here(self, tag: bytes, text: str) -> None:
        import time

        if self.gone or self._writer.is_closing():
            return
        transport = self._writer.transport
        unsent = transport.get_write_buffer_size()
        now = time.monotonic()
        if unsent <= SLOW_READER_BYTES:
            self._unread_since = None
        elif self._unread_since is None:
            self._unread_since = now
        if unsent > MAX_UNSENT_BYTES or (self._unread_since is not None
                                         and now - self._unread_since > SLOW_READER_SECONDS):
            self.drop("it read nothing of its answer")
            return
        self._writer.write(frame(tag, text.encode("utf-8", "surrogateescape")[:MAX_FRAME_BYTES]))

    def drop(self, why: str) -> None:
        """End a command that does not read (`serve_link` sees its connection go), logged once a run; on the link's
        thread."""
        self.gone = True
        log_once("slow reader", "ended a command whose process %s", why)
        self._writer.transport.abort()

    async def finish(self, code: int) -> None:
        """The exit code, and the answer's last bytes given SLOW_READER_SECONDS to be read (then dropped)."""
        import asyncio

        self._send_here(EXIT, str(code))
        if not self._writer.is_closing():
            try:
                await asyncio.wait_for(self._writer.drain(), SLOW_READER_SECONDS)
            except TimeoutError:
                self.drop("did not read the end of its answer")


def _settle(asked: asyncio.Future[str | None], reply: str | None) -> None:
    if not asked.done():
        asked.set_result(reply)


def refusal(header: bytes) -> str | None:
    """Why a request with this header line cannot be served (another link version, saying which side is older,
    or a header that cannot be read); None when it can."""
    parts = header.split()
    if len(parts) != 4 or not parts[1].isdigit() or not parts[3].isdigit():
        return "The request could not be read."
    link, version = int(parts[1]), parts[2].decode("ascii", "replace")[:40]
    if link > LINK_VERSION:
        return (f"The running Workroom app (version {__version__}) is older than this `workroom` command (version "
                f"{version}) and cannot take its commands. Quit the app (from its menu, or `workroom app quit` with "
                "the command that came with it) and open the new one.")
    if link < LINK_VERSION:
        return (f"The running Workroom app (version {__version__}) is newer than this `workroom` command (version "
                f"{version}). Use the `workroom` command that came with the app.")
    if int(parts[3]) > MAX_REQUEST_BYTES:
        return f"The command is longer than the app takes ({MAX_REQUEST_BYTES} bytes)."
    return None


def read_body(body: bytes) -> tuple[str, bool, list[str]] | None:
    """The folder, whether stdin is a terminal, and the arguments; None when the body cannot be one."""
    fields = [f.decode("utf-8", "surrogateescape") for f in body.split(b"\0")]
    if len(fields) < 2 or len(fields) - 2 > MAX_ARGS or not os.path.isabs(fields[0]) or fields[1] not in ("0", "1"):
        return None
    if any(len(f.encode("utf-8", "surrogateescape")) > MAX_ARG_BYTES for f in fields[2:]):
        return None
    return fields[0], fields[1] == "1", fields[2:]


async def serve_link(header: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     run: Callable[[list[str], LinkTerminal], Awaitable[int]],
                     app_loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Serve one command request (its header line already read, the peer already checked): the app's hello, what
    the command prints, its exit code. The command runs on `app_loop` (the app's, when this is the link's thread;
    by default this loop). A command whose `workroom` process goes away (Ctrl-C, a closed pipe) is cancelled;
    nothing it would have printed is kept."""
    import asyncio

    writer.write(frame(HELLO, b"link=%d version=%s pid=%d" % (LINK_VERSION, __version__.encode(), os.getpid())))
    why = refusal(header)
    body = None
    if why is None:
        body = read_body(await asyncio.wait_for(reader.readexactly(int(header.split()[3])), HELLO_SECONDS))
        why = None if body is not None else "The command's arguments could not be read."
    if body is None:
        log_once("refused", "refused a command's request: %s", why)
        writer.write(frame(REFUSED, (why or "").encode()) + frame(EXIT, b"%d" % EXIT_ERROR))
        await asyncio.wait_for(writer.drain(), SLOW_READER_SECONDS)
        return
    cwd, tty, argv = body
    await serve_command(LinkTerminal(writer, cwd, tty), argv, reader, run, app_loop)


async def serve_command(term: LinkTerminal, argv: list[str], reader: asyncio.StreamReader,
                        run: Callable[[list[str], LinkTerminal], Awaitable[int]],
                        app_loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Run one command whose request was read (on `app_loop`, by default this one), saying it on `term`, then its
    exit code; cancelled when its `workroom` process goes away (`serve_link`)."""
    import asyncio
    import logging

    here = asyncio.get_running_loop()
    away: _AppSide | None = None
    if app_loop is None or app_loop is here:
        command: asyncio.Future[int] = asyncio.ensure_future(run(argv, term))
    else:  # its cancel reaches the app's loop (run_coroutine_threadsafe's future cancels the task there)
        away = _AppSide(app_loop)
        command = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(away.run(run, argv, term), app_loop))
    listening = asyncio.ensure_future(_listen(reader, term))
    either: set[asyncio.Future[Any]] = {command, listening}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not command.done():
            command.cancel()  # its `workroom` process went away
            await asyncio.gather(command, return_exceptions=True)
            if away is not None:  # on the app's loop: its place is free once it has ended there
                await away.ended()
            return
        try:
            code = command.result()
        except Exception:  # `cli.serve` says its own failures; this is a bug of the link's
            logging.getLogger(__name__).exception("workroom %s failed where it was served", " ".join(argv[:2]))
            code = EXIT_ERROR
        await term.finish(code)
    finally:
        listening.cancel()
        if not command.done():
            command.cancel()


class _AppSide:
    """A command run on the app's loop for the link's thread: when it has really ended there (a cancel from the
    link's side marks the link's future done at once, and a cancel can be lost: it is asked again)."""

    def __init__(self, app_loop: asyncio.AbstractEventLoop) -> None:
        import concurrent.futures

        self._loop = app_loop
        self._task: asyncio.Task[Any] | None = None
        self._ended: concurrent.futures.Future[None] = concurrent.futures.Future()

    async def run(self, run: Callable[[list[str], LinkTerminal], Awaitable[int]], argv: list[str],
                  term: LinkTerminal) -> int:
        import asyncio

        self._task = asyncio.current_task()
        try:
            return await run(argv, term)
        finally:
            self._ended.set_result(None)

    async def ended(self, tries: int = 10, every: float = 1.0) -> None:
        """Wait (on the link's loop) until the command has ended on the app's loop, cancelling it again each
        `every` seconds, `tries` times; one that never ends is logged and left (its place is then freed)."""
        import asyncio

        for _ in range(tries):
            if self._task is None and not self._ended.done():  # never started: the app's loop is gone
                return
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._ended)), every)
                return
            except TimeoutError:
                try:
                    if self._task is not None:
                        self._loop.call_soon_threadsafe(self._task.cancel)
                except RuntimeError:  # the app's loop has closed: nothing runs there any more
                    return
        log_once("unended", "a command whose process went away did not end in %.0f s on the app's loop: left",
                 tries * every)


async def _listen(reader: asyncio.StreamReader, term: LinkTerminal) -> None:
    """Answers to the questions the command asks; returns when the `workroom` process closes its end."""
    import asyncio

    while True:
        try:
            head = await reader.readexactly(5)
            size = int.from_bytes(head[1:], "big")
            if size > MAX_REPLY_BYTES:
                log_once("oversized", "a command sent a frame of %d bytes (at most %d): ended", size, MAX_REPLY_BYTES)
                return
            payload = await reader.readexactly(size)
        except (asyncio.IncompleteReadError, OSError):
            return
        if head[:1] in (ANSWER, NO_ANSWER):
            term.answered(payload.decode("utf-8", "surrogateescape") if head[:1] == ANSWER else None)
        else:
            log_once("malformed", "a command sent a frame the app does not take (tag %r): ignored", head[:1])
