"""One app per app home (workroom.single_instance): the lock, the hand-over, a crashed app's leftovers."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from workroom import single_instance
from workroom.paths import app_paths

pytestmark = pytest.mark.unit


def _paths(home: Path):  # type: ignore[no-untyped-def]
    return app_paths({"WORKROOM_HOME": str(home)})


def test_the_second_claim_hands_over_to_the_first(tmp_path: Path) -> None:
    paths = _paths(tmp_path / "home")
    shown: list[str] = []

    async def scenario() -> int:
        first = single_instance.claim(paths)
        assert isinstance(first, single_instance.InstanceLock)
        try:
            await first.serve(lambda: shown.append("shown"))
            # A second launch blocks while it waits, as a real one does: off the loop that serves it.
            return await asyncio.to_thread(single_instance.claim, paths)  # type: ignore[arg-type]
        finally:
            first.release()

    assert asyncio.run(scenario()) == single_instance.EXIT_HANDED_OVER
    assert shown == ["shown"]


def test_separate_homes_do_not_see_each_other(tmp_path: Path) -> None:
    one = single_instance.claim(_paths(tmp_path / "one"))
    two = single_instance.claim(_paths(tmp_path / "two"))
    try:
        assert isinstance(one, single_instance.InstanceLock)
        assert isinstance(two, single_instance.InstanceLock)
    finally:
        for lock in (one, two):
            if isinstance(lock, single_instance.InstanceLock):
                lock.release()


def test_a_holder_that_never_answers_gives_its_own_exit_code(tmp_path: Path) -> None:
    paths = _paths(tmp_path / "home")
    first = single_instance.claim(paths)
    assert isinstance(first, single_instance.InstanceLock)
    try:  # holds the lock, never listens (a hung app)
        assert single_instance.hand_over(first.socket_path, timeout=0.5) == single_instance.EXIT_NO_ANSWER
    finally:
        first.release()


def test_a_crashed_apps_socket_and_lock_file_do_not_stop_the_next_start(tmp_path: Path) -> None:
    paths = _paths(tmp_path / "home")
    folder = single_instance.instance_folder(paths)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(folder / single_instance.SOCKET_NAME))
    stale.close()  # the file stays, nobody listens: what a killed app leaves
    (folder / single_instance.LOCK_NAME).write_text("12345\n")
    lock = single_instance.claim(paths)
    assert isinstance(lock, single_instance.InstanceLock)

    async def serve_and_ask() -> int:
        await lock.serve(lambda: None)
        return await asyncio.to_thread(single_instance.hand_over, lock.socket_path, 2.0)

    try:
        assert asyncio.run(serve_and_ask()) == single_instance.EXIT_HANDED_OVER
    finally:
        lock.release()


def test_an_open_runtime_folder_is_not_used(tmp_path: Path) -> None:
    paths = _paths(tmp_path / "home")
    paths.runtime_dir.mkdir(parents=True)
    paths.runtime_dir.chmod(0o777)
    assert single_instance.claim(paths) is None  # runs without the check (and logs why), never trusts it
