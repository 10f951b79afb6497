"""The request a command sends a warm starter (workroom.cli.warm, docs/cli.md "Warm start"): what goes in comes
out, it is bounded, and a body that cannot be one is refused (then the command runs itself)."""

from __future__ import annotations

import pytest
from workroom import app_link
from workroom.cli import warm

pytestmark = pytest.mark.unit


def body_of(request: bytes) -> bytes:
    header, body = request.split(b"\n", 1)
    parts = header.split()
    assert parts[0] == warm.HEADER and parts[1] == b"%d" % warm.WARM_VERSION and int(parts[3]) == len(body)
    return body


def test_the_folder_terminal_umask_environment_and_arguments_come_out_as_they_went_in() -> None:
    env = {"HOME": "/home/me", "EMPTY": "", "WITH=EQUALS": "dropped: a name cannot hold '='", "LANG": "fr_FR.UTF-8",
           "ODD": "caf\udce9 a=b"}
    argv = ["hosts", "add", "b\u00e9b\u00e9", "--identity", "~/k", ""]
    got = warm.read_body(body_of(warm.request(argv, "/work/folder", True, env)))
    assert got is not None
    cwd, tty, umask, code, environ, args = got
    assert (cwd, tty, args, code) == ("/work/folder", True, argv, warm.code_identity())
    assert 0 <= umask <= 0o777
    assert environ == {k: v for k, v in env.items() if "=" not in k}


def test_a_request_larger_than_a_starter_takes_is_not_sent() -> None:
    with pytest.raises(app_link.LinkError):
        warm.request(["x"], "/", False, {"BIG": "x" * warm.MAX_REQUEST_BYTES})
    with pytest.raises(app_link.LinkError):
        warm.request(["x"] * (app_link.MAX_ARGS + 1), "/", False, {})


@pytest.mark.parametrize("body", [
    b"", b"relative\x001\x00022\x00c\x000", b"/\x002\x00022\x00c\x000", b"/\x001\x00999\x00c\x000",
    b"/\x001\x00abc\x00c\x000", b"/\x001\x00022\x00c\x005\x00A=1", b"/\x001\x00022\x00c\x001\x00no-equals",
    b"/\x001\x00022\x00c\x001\x00=x", b"/\x001", b"/\x001\x00022\x00c\x00-1", b"/\x001\x00022\x000"])
def test_a_body_that_cannot_be_a_request_is_refused(body: bytes) -> None:
    assert warm.read_body(body) is None


@pytest.mark.parametrize(("given", "seconds"), [("", warm.IDLE_SECONDS), ("abc", warm.IDLE_SECONDS),
                                                ("nan", warm.IDLE_SECONDS), ("0", 1.0), ("30", 30.0),
                                                ("1e9", 86400.0)])
def test_the_idle_time_is_bounded(given: str, seconds: float) -> None:
    assert warm.idle_seconds({warm.IDLE_ENV: given}) == seconds


@pytest.mark.parametrize(("given", "on"), [("", True), ("1", True), ("0", False), ("off", False), (" No ", False),
                                           ("false", False)])
def test_starters_are_turned_off_in_words_a_person_uses(given: str, on: bool) -> None:
    assert warm.enabled({warm.ENV_SWITCH: given}) is on


FORK_PRINTS = """
import asyncio, logging, socket, sys, threading, warnings
from workroom import app_link
from workroom.cli import warm_server

async def scenario():
    ours, theirs = socket.socketpair()
    _, writer = await asyncio.open_unix_connection(sock=ours)
    term = app_link.LinkTerminal(writer, "/", False)
    loop = asyncio.get_running_loop()
    real_stdout = sys.stdout
    sys.stdout = warm_server._LinkStream(loop, term, app_link.OUT)
    sys.stderr = warm_server._LinkStream(loop, term, app_link.ERR)
    print("printed", flush=True)
    logging.getLogger("loud").warning("said on the loop %d", 1)
    logging.getLogger("quiet").addHandler(logging.NullHandler())

    def elsewhere():
        logging.getLogger("loud").error("said from a thread")
        logging.getLogger("quiet").error("never said")
        logging.getLogger("loud").info("below warnings")
        warnings.warn("a warning from a thread", UserWarning)
        raise RuntimeError("a thread's end")

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    await asyncio.sleep(0.1)
    writer.close()
    await writer.wait_closed()
    theirs.settimeout(2)
    got = b""
    while chunk := theirs.recv(65536):
        got += chunk
    real_stdout.write(got.hex())

asyncio.run(scenario())
"""


def test_what_a_fork_prints_outside_its_terminal_reaches_the_command_from_any_thread() -> None:
    """The fork's stdout and stderr (cli/warm_server.py) go to the command's, as frames on its link: Python's
    last-resort log handler (a record no handler took; not one a null handler took), a `warnings` message and an
    exception in a thread, written on the loop's thread or any other (handed to the loop that owns the link). In
    a fresh interpreter: Python's own hooks, not a test runner's."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FORK_PRINTS], capture_output=True, text=True, timeout=60,
                          check=True)
    frames, out, err = bytes.fromhex(done.stdout), b"", b""
    while frames:
        tag, size = frames[:1], int.from_bytes(frames[1:5], "big")
        assert tag in (app_link.OUT, app_link.ERR)
        if tag == app_link.OUT:
            out += frames[5:5 + size]
        else:
            err += frames[5:5 + size]
        frames = frames[5 + size:]
    said = err.decode()
    assert out == b"printed\n" and done.stderr == ""
    assert said.startswith("said on the loop 1\nsaid from a thread\n"), said
    assert "UserWarning: a warning from a thread" in said and "RuntimeError: a thread's end" in said
    assert "never said" not in said and "below warnings" not in said
