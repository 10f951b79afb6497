"""The local agent's socket folder when the preferred path is too long for a socket address: a folder only
this user can reach, never a predictable name in /tmp that another local user could make first."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.fifo import within
from workroom.paths import SOCKET_DIR_NOTE, UnsafeFolderError, agent_socket_dir, check_private_dir

pytestmark = pytest.mark.unit


@pytest.fixture
def long_preferred(tmp_path: Path) -> Path:
    state = tmp_path / ("s" * 90)
    state.mkdir(mode=0o700)
    return state / "run"


@pytest.fixture
def made() -> Iterator[list[Path]]:
    """Folders the code under test made in /tmp, removed afterwards."""
    out: list[Path] = []
    yield out
    for d in out:
        if d.is_symlink():
            d.unlink()
        else:
            shutil.rmtree(d, ignore_errors=True)


def test_a_short_preferred_path_is_used_as_is(tmp_path: Path) -> None:
    assert agent_socket_dir(tmp_path / "run", env={}) == tmp_path / "run"


def test_the_fallback_is_a_random_private_folder_remembered_across_calls(long_preferred: Path,
                                                                         made: list[Path]) -> None:
    first = agent_socket_dir(long_preferred, env={})
    made.append(first)
    assert first.parent == Path("/tmp") and len(str(first / "agent.sock.lock")) <= 100
    check_private_dir(first)
    assert agent_socket_dir(long_preferred, env={}) == first
    assert (long_preferred.parent / SOCKET_DIR_NOTE).read_text().strip() == str(first)


def test_a_folder_made_first_under_the_old_predictable_name_is_not_used(long_preferred: Path,
                                                                        made: list[Path]) -> None:
    digest = hashlib.sha256(str(long_preferred).encode()).hexdigest()[:10]
    planted = Path("/tmp") / f"wr-{os.getuid()}-{digest}"
    planted.mkdir(mode=0o777, exist_ok=True)
    made.append(planted)
    chosen = agent_socket_dir(long_preferred, env={})
    made.append(chosen)
    assert chosen != planted
    check_private_dir(chosen)


def test_a_remembered_folder_swapped_for_a_symlink_is_replaced(long_preferred: Path, made: list[Path],
                                                               tmp_path: Path) -> None:
    first = agent_socket_dir(long_preferred, env={})
    made.append(first)
    first.rmdir()
    elsewhere = tmp_path / "theirs"
    elsewhere.mkdir(mode=0o700)
    first.symlink_to(elsewhere)  # someone re-made the name after /tmp was cleaned
    second = agent_socket_dir(long_preferred, env={})
    made.append(second)
    assert second != first and not second.is_symlink()
    check_private_dir(second)


def test_a_fifo_in_place_of_the_note_does_not_hang_and_is_replaced(long_preferred: Path,
                                                                   made: list[Path]) -> None:
    note = long_preferred.parent / SOCKET_DIR_NOTE
    os.mkfifo(note)
    chosen = within(lambda: agent_socket_dir(long_preferred, env={}), [note])
    made.append(chosen)
    check_private_dir(chosen)
    assert stat.S_ISREG(note.lstat().st_mode) and note.read_text().strip() == str(chosen)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand a folder to another user")
def test_a_remembered_folder_now_owned_by_someone_else_is_replaced(long_preferred: Path,
                                                                    made: list[Path]) -> None:
    first = agent_socket_dir(long_preferred, env={})
    made.append(first)
    os.chown(first, 65534, 65534)
    second = agent_socket_dir(long_preferred, env={})
    made.append(second)
    assert second != first
    check_private_dir(second)


def test_a_private_xdg_runtime_dir_is_preferred_and_an_open_one_is_not(long_preferred: Path,
                                                                     made: list[Path]) -> None:
    runtime = Path(tempfile.mkdtemp(prefix=f"xdg-{os.getpid()}-"))  # short, like /run/user/UID
    made.append(runtime)
    chosen = agent_socket_dir(long_preferred, env={"XDG_RUNTIME_DIR": str(runtime)})
    assert chosen.parent == runtime
    check_private_dir(chosen)
    runtime.chmod(0o777)
    other = agent_socket_dir(long_preferred, env={"XDG_RUNTIME_DIR": str(runtime)})
    made.append(other)
    assert other.parent == Path("/tmp")


def test_check_private_dir_says_what_is_wrong(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o755)
    with pytest.raises(UnsafeFolderError, match="open to other users"):
        check_private_dir(d)
    link = tmp_path / "l"
    link.symlink_to(d)
    d.chmod(0o700)
    with pytest.raises(UnsafeFolderError, match="symbolic link"):
        check_private_dir(link)
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_the_local_provider_never_lands_in_a_folder_someone_else_made(long_preferred: Path,
                                                                      made: list[Path]) -> None:
    """Through the local provider's own layout (what the app uses)."""
    from workroom.agent_bundle import AgentBundle
    from workroom.core.hosts import Host
    from workroom.providers import make_provider
    from workroom.providers.base import ProviderContext

    digest = hashlib.sha256(str(long_preferred).encode()).hexdigest()[:10]
    planted = Path("/tmp") / f"wr-{os.getuid()}-{digest}"
    planted.mkdir(mode=0o777, exist_ok=True)
    os.chmod(planted, 0o777)
    made.append(planted)
    context = ProviderContext(bundle=AgentBundle(b"x", "0" * 64, "0.0.0"), known_hosts=None,
                              state_dir=long_preferred.parent)
    chosen = Path(make_provider("local", context).layout(Host.local("me")).state_dir)
    made.append(chosen)
    check_private_dir(chosen)
