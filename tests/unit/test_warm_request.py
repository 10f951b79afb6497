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


def test_a_starters_fork_says_what_the_last_resort_handler_would_from_any_thread() -> None:
    """The fork's stand-in for Python's last-resort log handler (cli/warm_server.py): a record no handler took is
    said on the command's stderr, formatted as that handler formats it, from the loop's thread or any other (the
    link is the loop's: the record is handed to it); one a null handler took is said nowhere."""
    import asyncio
    import logging
    import socket
    import threading

    from workroom.cli import warm_server

    async def scenario() -> bytes:
        ours, theirs = socket.socketpair()
        _, writer = await asyncio.open_unix_connection(sock=ours)
        term = app_link.LinkTerminal(writer, "/", False)
        saved = logging.lastResort
        logging.lastResort = warm_server._LastResort(asyncio.get_running_loop(), term)
        loud, quiet = logging.getLogger("wr-test-loud"), logging.getLogger("wr-test-quiet")
        loud.propagate = quiet.propagate = False  # pytest's own handlers sit on the root
        quiet.addHandler(logging.NullHandler())
        try:
            loud.warning("said on the loop %d", 1)
            thread = threading.Thread(target=lambda: (loud.error("said from a thread"), quiet.error("never said"),
                                                      loud.info("below warnings")))
            thread.start()
            thread.join()
            await asyncio.sleep(0.1)
            await writer.drain()
        finally:
            logging.lastResort = saved
            quiet.handlers.clear()
        writer.close()
        await writer.wait_closed()
        theirs.settimeout(2)
        got = b""
        while True:
            chunk = theirs.recv(65536)
            if not chunk:
                break
            got += chunk
        theirs.close()
        return got

    got = asyncio.run(scenario())
    assert got == (app_link.frame(app_link.ERR, b"said on the loop 1\n")
                   + app_link.frame(app_link.ERR, b"said from a thread\n"))
