"""The `--log` opener: a regular file (or a link to one) is appended to in blocking mode; anything else is a
plain refusal with exit 4, never a wait."""

import fcntl
import os
import stat

import pytest
from wr_agent import log_file
from wr_agent.runtime import StartupError

pytestmark = pytest.mark.unit


def test_a_regular_file_is_created_0600_and_appended_to_in_blocking_mode(tmp_path):
    path = tmp_path / "agent.log"
    path.write_bytes(b"old\n")
    path.chmod(0o600)
    link = tmp_path / "link.log"
    link.symlink_to(path)
    fd = log_file.open_log(str(link))
    try:
        assert not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK
        os.write(fd, b"new\n")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"old\nnew\n"
    fresh = tmp_path / "fresh.log"
    os.close(log_file.open_log(str(fresh)))
    assert stat.S_IMODE(fresh.stat().st_mode) & 0o077 == 0


@pytest.mark.parametrize("kind", ["FIFO", "folder", "device"])
def test_what_is_not_a_regular_file_is_refused_with_exit_4(tmp_path, kind):
    path = {"device": "/dev/null", "folder": str(tmp_path)}.get(kind, str(tmp_path / "fifo"))
    if kind == "FIFO":
        os.mkfifo(path)
    with pytest.raises(StartupError) as err:
        log_file.open_log(path)
    assert err.value.code == log_file.EXIT_BAD_LOG == 4
    assert f"is a {kind}, not a regular file" in str(err.value)


def test_a_log_that_cannot_be_opened_is_the_usual_start_up_error(tmp_path):
    with pytest.raises(StartupError) as err:
        log_file.open_log(str(tmp_path / "missing" / "agent.log"))
    assert err.value.code == StartupError.DEFAULT_CODE and "cannot open the log file" in str(err.value)
