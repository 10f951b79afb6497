"""The command's link to the running app (workroom.app_link) over the real single-instance socket: a command's
words, questions and exit code go through in order; the request is versioned and bounded, and an older or newer
app (or command) says which side is older; a crashed app's socket, or none, means "run here"; the folder the
command looks in is the one the app listens in. The app side here runs a stand-in command (the real one, with
the real app, is tests/gui/test_one_engine.py)."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from workroom import __version__, app_link, single_instance
from workroom.paths import app_paths

pytestmark = pytest.mark.unit

Run = Callable[[list[str], app_link.LinkTerminal], Awaitable[int]]


@contextmanager
def app_serving(home: Path, run: Run | None) -> Iterator[single_instance.InstanceLock]:
    """The single-instance lock and socket of `home`, served on a loop of its own (as the app's), commands run
    by `run` (None: an app from before this link, which knows only `show`)."""
    lock = single_instance.claim(app_paths({"WORKROOM_HOME": str(home)}))
    assert isinstance(lock, single_instance.InstanceLock)
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(lock.serve(lambda: None, run))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield lock
    finally:
        lock.release()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def through_app(home: Path, argv: list[str], capfd: pytest.CaptureFixture[str],
                monkeypatch: pytest.MonkeyPatch) -> tuple[int | None, str, str]:
    monkeypatch.setenv("WORKROOM_HOME", str(home))
    code = app_link.run_through_app(argv)
    out, err = capfd.readouterr()
    return code, out, err


def test_a_command_goes_through_and_its_words_come_back_in_order(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], str, bool]] = []

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        seen.append((argv, term.cwd, term.stdin_is_tty))
        term.out("first line")
        term.err("a warning")
        term.out("ünïcödé 箱子 and a\ttab")
        return 7

    monkeypatch.chdir(tmp_path)
    with app_serving(tmp_path / "home", run):
        code, out, err = through_app(tmp_path / "home", ["status", "--json", "-"], capfd, monkeypatch)
    assert code == 7
    assert out == "first line\nünïcödé 箱子 and a\ttab\n" and err == "a warning\n"
    assert seen == [(["status", "--json", "-"], str(tmp_path), False)]


def test_the_app_asks_and_the_command_answers_from_its_stdin(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[str | None] = []

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        answers.append(await term.ask("Passphrase: ", secret=True))
        answers.append(await term.ask("Again? "))
        return 0

    read, write = os.pipe()
    os.write(write, b"s3cret\n")
    os.close(write)
    with app_serving(tmp_path / "home", run), os.fdopen(read) as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        code, _, _ = through_app(tmp_path / "home", ["secret", "set"], capfd, monkeypatch)
    assert code == 0 and answers == ["s3cret", None]  # the second: end of input


def test_no_app_means_run_here_and_a_crashed_apps_socket_too(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    assert through_app(home, ["status"], capfd, monkeypatch)[0] is None
    folder = single_instance.instance_folder(app_paths({"WORKROOM_HOME": str(home)}))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(folder / app_link.SOCKET_NAME))  # bound, never listening: as a crashed app leaves it
    stale.close()
    assert through_app(home, ["status"], capfd, monkeypatch)[0] is None


def test_an_older_app_that_only_knows_show_is_named_so(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The app before this link read one line and, when it was not `show`, closed without a word."""
    with app_serving(tmp_path / "home", None):
        code, out, err = through_app(tmp_path / "home", ["status"], capfd, monkeypatch)
    assert code == app_link.EXIT_ERROR and out == ""
    assert "older version that does not take commands" in err and "Traceback" not in err


@pytest.mark.parametrize(("link", "words"), [(app_link.LINK_VERSION + 1, "is older than this `workroom` command"),
                                             (app_link.LINK_VERSION - 1, "is newer than this `workroom` command")])
def test_a_request_of_another_link_version_is_refused_saying_which_side_is_older(
        tmp_path: Path, link: int, words: str) -> None:
    ran: list[list[str]] = []

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        ran.append(argv)
        return 0

    with app_serving(tmp_path / "home", run) as lock, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(lock.socket_path))
        body = b"/\x000\x00status"
        sock.sendall(b"%s %d 9.9.9 %d\n" % (app_link.HEADER, link, len(body)) + body)
        frames = app_link._Frames(sock)  # type: ignore[arg-type]
        got = [frames.next() for _ in range(3)]
    assert ran == []
    assert got[0] is not None and got[0][0] == app_link.HELLO and b"link=%d" % app_link.LINK_VERSION in got[0][1]
    assert got[1] is not None and got[1][0] == app_link.REFUSED
    assert words in got[1][1].decode() and __version__ in got[1][1].decode() and "9.9.9" in got[1][1].decode()
    assert got[2] == (app_link.EXIT, b"1")


def test_requests_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(app_link.LinkError, match="too long"):
        app_link.request(["x" * (app_link.MAX_ARG_BYTES + 1)])
    with pytest.raises(app_link.LinkError, match="too long"):
        app_link.request(["a"] * (app_link.MAX_ARGS + 1))
    assert app_link.refusal(b"%s 1 0.1.0 %d" % (app_link.HEADER, app_link.MAX_REQUEST_BYTES + 1)) is not None
    assert app_link.refusal(b"%s one two" % app_link.HEADER) == "The request could not be read."
    assert app_link.read_body(b"relative\x000\x00status") is None  # the folder must be absolute
    assert app_link.read_body(b"/\x00maybe\x00status") is None
    assert app_link.read_body(b"/tmp\x001\x00status\x00--json") == ("/tmp", True, ["status", "--json"])


def test_a_command_that_goes_away_ends_the_apps_side_of_it(tmp_path: Path) -> None:
    """Ctrl-C at the command (its socket closed): the app cancels what it was running for it."""
    started, cancelled = threading.Event(), threading.Event()

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 0

    with app_serving(tmp_path / "home", run) as lock:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(lock.socket_path))
        sock.sendall(app_link.request(["status", "--watch"]))
        assert started.wait(10)
        sock.close()
        assert cancelled.wait(10)


def test_the_command_looks_where_the_app_listens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheap guess (os.path only) is the folder the app's lock and socket are in, with a home set and
    without one; where it is not (a path too long for a socket), the exact look finds it."""
    for env in ({"WORKROOM_HOME": str(tmp_path / "home")}, {"WORKROOM_HOME": "rel/home"}):
        monkeypatch.chdir(tmp_path)
        assert app_link.guessed_folder(env) == str(single_instance.instance_folder(app_paths(env)))
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    monkeypatch.delenv("WORKROOM_HOME", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    expected = single_instance.instance_folder(app_paths())
    assert app_link.guessed_folder(os.environ) == str(expected)
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert app_link.guessed_folder(os.environ) == str(single_instance.instance_folder(app_paths()))


def test_the_peer_is_checked_to_be_this_user(tmp_path: Path) -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert app_link.peer_uid(left) == os.getuid()


def frames_of(data: bytes) -> list[Any]:
    """Frames written by the app, read back by the command's reader (a socketpair between them)."""
    left, right = socket.socketpair()
    with left, right:
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        reader = app_link._Frames(right)  # type: ignore[arg-type]
        out = []
        while (got := reader.next()) is not None:
            out.append(got)
        return out


def test_a_frame_larger_than_the_command_takes_is_refused_in_words() -> None:
    assert frames_of(app_link.frame(app_link.OUT, b"hi\n")) == [(app_link.OUT, b"hi\n")]
    with pytest.raises(app_link.LinkError, match="larger than this command takes"):
        frames_of(app_link.OUT + (app_link.MAX_FRAME_BYTES + 1).to_bytes(4, "big"))
