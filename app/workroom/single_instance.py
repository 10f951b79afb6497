"""One running app per app home: a second launch hands over to the first and ends.

Finder, Spotlight, `open`, the binary started again, a login item plus a manual start: each would otherwise
start a second engine that connects to every host twice (twice the traffic on boxes that should sleep, two
answers to each prompt). The first app holds an exclusive lock on `app.lock` in its private runtime folder
and listens on `app.sock` beside it; a later launch that finds the lock taken asks the holder to show its
window and exits. The lock is per app home (`WORKROOM_HOME`), not per user, so separate homes (tests, a
second profile) still run side by side.

The same socket serves the `workroom` command while the app runs (workroom.app_link): a request line is a
command, run by the app against its own engine. The socket is served on a thread of its own with a plain asyncio
loop (docs/app_link.md, "Bounds"): connecting, the bounds, the request line, a refusal and every frame are that
thread's; only a command's own work runs on the app's loop. A flood of clients therefore never queues ahead of the
window's events, and a person's look waits behind no stranger's bytes on the app's loop. The folder is private
to this user (checked, as for the agent's socket); the holder also checks the peer's uid before it acts on a
request, and reads at most a line of 4 KiB and `app_link.MAX_REQUEST_BYTES` after it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from workroom import app_link
from workroom.paths import AppPaths, agent_socket_dir, check_private_dir

if TYPE_CHECKING:
    import asyncio

    CommandRunner = Callable[[list[str], app_link.LinkTerminal], Awaitable[int]]
    """Runs one `workroom` command (its arguments; its terminal) on the app's loop: its exit code."""

log = logging.getLogger(__name__)

LOCK_NAME = app_link.LOCK_NAME
SOCKET_NAME = app_link.SOCKET_NAME
SHOW = b"show\n"
SHOWN = b"shown\n"
HAND_OVER_SECONDS = 5.0
"""How long a second launch waits for the first to answer (the first may itself be starting)."""
EXIT_HANDED_OVER = 0
EXIT_NO_ANSWER = 3
"""A second launch found this home's app running but it did not answer (docs/ui.md, "One app per home")."""


@dataclass
class InstanceLock:
    """This process is the app for its home while it holds this (release it on the way out)."""

    folder: Path
    fd: int
    clients: int = 0
    """Commands being served now (at most app_link.MAX_CLIENTS; one more is answered BUSY)."""
    waiting: int = 0
    """Connections whose request line has not come yet (at most app_link.MAX_WAITING)."""
    _link: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def socket_path(self) -> Path:
        return self.folder / SOCKET_NAME

    async def serve(self, on_show: Callable[[], None], run: CommandRunner | None = None) -> None:
        """Listen for later launches (each `show` calls `on_show` on this loop) and, with `run`, for `workroom`
        commands (each run on this loop). The socket itself is served on the link's thread; this returns once it
        listens."""
        import asyncio  # here, not above: `claim` runs before the tray shows, and needs none of it
        import concurrent.futures

        app_loop = asyncio.get_running_loop()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # a crashed app's socket: ours, since we hold the lock
        link = asyncio.new_event_loop()
        listening: concurrent.futures.Future[None] = concurrent.futures.Future()

        def serve_here() -> None:
            asyncio.set_event_loop(link)
            server: asyncio.AbstractServer | None = None
            try:
                server = link.run_until_complete(asyncio.start_unix_server(
                    lambda r, w: self._serve_one(r, w, app_loop, on_show, run), path=str(self.socket_path),
                    limit=4096))
                os.chmod(self.socket_path, 0o600)
            except BaseException as exc:  # said where `serve` was awaited
                if server is not None:
                    server.close()
                link.close()
                listening.set_exception(exc)
                return
            listening.set_result(None)
            try:
                link.run_forever()
            finally:
                server.close()
                left = asyncio.all_tasks(link)
                for task in left:
                    task.cancel()
                link.run_until_complete(asyncio.gather(*left, return_exceptions=True))
                link.close()

        self._link = link
        self._thread = threading.Thread(target=serve_here, name="workroom-link", daemon=True)
        self._thread.start()
        await asyncio.wrap_future(listening)

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         app_loop: asyncio.AbstractEventLoop, on_show: Callable[[], None],
                         run: CommandRunner | None) -> None:
        """One connection (on the link's thread), counted twice over: while its request line has not come (at most
        MAX_WAITING such, each for REQUEST_SECONDS), then while its command runs (at most MAX_CLIENTS). Past either
        bound it is answered BUSY at once (nothing queued), so a flood of clients never holds the app, idle ones
        never take a command's place, and a command's look then runs in the command itself."""
        import asyncio

        if self.waiting >= app_link.MAX_WAITING:
            self._busy(writer, "too many waiting",
                       "more than %d connections at once on the app's socket sent nothing yet: answered busy",
                       app_link.MAX_WAITING)
            return
        self.waiting += 1
        try:
            sock = writer.get_extra_info("socket")
            uid = app_link.peer_uid(sock) if sock is not None else None
            if uid is not None and uid != os.getuid():
                log.warning("another launch: refused a request from uid %s", uid)
                writer.close()
                return
            line = await asyncio.wait_for(reader.readline(), timeout=app_link.REQUEST_SECONDS)
        except (TimeoutError, OSError, ValueError, EOFError):
            writer.close()
            return
        finally:
            self.waiting -= 1
        if self.clients >= app_link.MAX_CLIENTS:
            self._busy(writer, "too many", "more than %d commands at once on the app's socket: answered busy",
                       app_link.MAX_CLIENTS)
            return
        self.clients += 1
        try:
            await _answer(line, reader, writer, app_loop, on_show, run)
        finally:
            self.clients -= 1

    @staticmethod
    def _busy(writer: asyncio.StreamWriter, kind: str, why: str, bound: int) -> None:
        app_link.log_once(kind, why, bound)
        with contextlib.suppress(OSError):
            writer.write(app_link.busy_answer())
        writer.close()

    def release(self) -> None:
        """Stop listening (the link's thread ends its connections) and let the home go."""
        if self._link is not None and self._thread is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed
                self._link.call_soon_threadsafe(self._link.stop)
            self._thread.join(5)
            self._link = self._thread = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = -1


async def _answer(line: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                  app_loop: asyncio.AbstractEventLoop, on_show: Callable[[], None],
                  run: CommandRunner | None = None) -> None:
    import asyncio

    try:
        if line == SHOW:
            log.info("another launch of this app: showing the window instead")
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_called(on_show), app_loop))  # shown, then said
            writer.write(SHOWN)
            await writer.drain()
        elif run is not None and app_link.is_request(line):
            await app_link.serve_link(line, reader, writer, run, app_loop)
        elif line:
            app_link.log_once("unknown", "a request on the app's socket that is neither a launch nor a command: "
                                         "closed")
    except (TimeoutError, OSError, ValueError, EOFError):
        pass
    except Exception:  # one request's bug must not stop the app answering the next
        log.exception("a request on the app's socket failed")
    finally:
        writer.close()


async def _called(call: Callable[[], None]) -> None:
    call()


def instance_folder(paths: AppPaths) -> Path:
    """The private folder that holds this home's lock and socket (a short one when the runtime folder's path
    would not fit in a socket address)."""
    paths.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder = agent_socket_dir(paths.runtime_dir)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_private_dir(folder)
    return folder


def claim(paths: AppPaths) -> InstanceLock | int | None:
    """The lock when this is the first app for its home; an exit code when another app has it (it was asked to
    show its window); None when no lock can be taken here (the app then runs without one, and says why)."""
    try:
        folder = instance_folder(paths)
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        log.warning("one app per home: cannot use the runtime folder (%s); running without the check", exc)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            log.warning("one app per home: cannot lock %s (%s); running without the check", folder, exc)
            return None
        return hand_over(folder / SOCKET_NAME)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return InstanceLock(folder, fd)


def hand_over(socket_path: Path, timeout: float = HAND_OVER_SECONDS) -> int:
    """Ask the running app to show its window. Its socket may not be up yet (it is starting): try again
    until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                sock.connect(str(socket_path))
                sock.sendall(SHOW)
                answer = sock.recv(len(SHOWN))
            if answer == SHOWN:
                return EXIT_HANDED_OVER
        except OSError:
            pass
        if time.monotonic() >= deadline:
            return EXIT_NO_ANSWER
        time.sleep(0.1)
