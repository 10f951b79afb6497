"""State file round trip, clear errors on bad input, and refusing to run without root."""

from __future__ import annotations

from pathlib import Path

import pytest
from simbox import control
from simbox.state import BoxRecord, SimboxError, SimboxState, read_state, write_state

pytestmark = pytest.mark.unit


def _state(tmp_path: Path) -> SimboxState:
    box = BoxRecord(name="box1", netns="wrsbabcde1", host_if="wshabcde1", box_if="eth0",
                    host_addr="10.232.1.1", box_addr="10.232.1.2", user="wrsbabcde1",
                    home="/home/wrsbabcde1", cgroup=None, freezer="signal", idle_window_s=3.0,
                    dir=str(tmp_path / "boxes/box1"), uid=1001, init_pid=42, proxy_port=5555,
                    host_key_line="[127.0.0.1]:5555 ssh-ed25519 AAAA")
    return SimboxState(run_id="abcde", daemon_pid=41, idle_window_s=3.0, ipv6=False, freezer="signal",
                       client_key=str(tmp_path / "k"), dir=str(tmp_path), started_at=1.0, ready=True,
                       health_port=6000, boxes=[box])


def test_state_round_trips(tmp_path: Path) -> None:
    s = _state(tmp_path)
    write_state(s, tmp_path / "state.json")
    back = read_state(tmp_path / "state.json")
    assert back == s
    assert back is not None and back.health_url == "http://127.0.0.1:6000"
    assert back.box("box1").proxy_port == 5555
    with pytest.raises(SimboxError, match="no box named 'box9'"):
        back.box("box9")


def test_missing_state_is_none_and_corrupt_state_is_a_clear_error(tmp_path: Path) -> None:
    assert read_state(tmp_path / "nope.json") is None
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(SimboxError, match="cannot read"):
        read_state(tmp_path / "state.json")
    assert (tmp_path / "state.json").read_text() == "{not json"  # nothing lost


def test_workroom_home_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simbox.state import simbox_dir

    monkeypatch.setenv("WORKROOM_HOME", str(tmp_path))
    assert simbox_dir() == tmp_path / "state" / "simbox"
    assert simbox_dir(tmp_path / "x") == tmp_path / "x" / "state" / "simbox"


def test_refuses_without_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(SimboxError, match="needs root"):
        control.up(1, 3.0, home=tmp_path)
    with pytest.raises(SimboxError, match="needs root"):
        control.down(home=tmp_path)
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(("boxes", "window", "match"), [(0, 3.0, "--boxes"), (2, 0.0, "--idle-window"),
                                                        (2, -5.0, "--idle-window")])
def test_bad_arguments_are_refused_before_anything_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          boxes: int, window: float, match: str) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    with pytest.raises(SimboxError, match=match):
        control.up(boxes, window, home=tmp_path)
    assert not (tmp_path / "state").exists()
