"""`workroom hosts` without the app, in-process against a throwaway WORKROOM_HOME (no host is contacted): a missing
key file is refused when the host is added, a relative one is kept as the absolute path it named; `hosts edit`
changes only the flags given; a refused value names the flag typed; names in wide characters keep the list
aligned; every path of `--json` is JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workroom import cli
from workroom.core.errors import ExitCode
from workroom.core.text_width import cells
from workroom.paths import app_paths
from workroom.storage import load_hosts

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKROOM_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def stored(name: str):  # type: ignore[no-untyped-def]
    return load_hosts(app_paths()).value.require(name)


def test_a_key_file_that_is_not_there_is_refused_when_the_host_is_added(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hosts", "add", "box", "--provider", "ssh", "--identity", "keys/id_box"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("workroom: No such key file: --identity:") and str(tmp_path / "keys/id_box") in err
    assert load_hosts(app_paths()).value.get("box") is None
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_box").write_text("a key")
    assert cli.main(["hosts", "add", "box", "--provider", "ssh", "--identity", "keys/id_box"]) == 0
    identity = stored("box").identity
    assert identity is not None and identity.value == str(tmp_path / "keys" / "id_box")
    # `./nokey` and `keys/../keys/id_box` are said and stored as the path they name, not "<folder>/./nokey"
    assert cli.main(["hosts", "add", "box2", "--provider", "ssh", "--identity", "./keys/../keys/id_box"]) == 0
    assert stored("box2").identity.value == str(tmp_path / "keys" / "id_box")
    assert cli.main(["hosts", "add", "box3", "--provider", "ssh", "--identity", "./nokey"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"--identity: {tmp_path / 'nokey'} is not a file." in err and "/./" not in err


def test_edit_changes_only_the_flags_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hosts", "add", "box", "--provider", "ssh", "--host", "10.0.0.1", "--user", "ann",
                     "--port", "22", "--idle-window", "600"]) == 0
    assert cli.main(["hosts", "edit", "box", "--port", "2222", "--idle-window", ""]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "changed box: --port 2222, --idle-window cleared"
    host = stored("box")
    assert (host.address, host.user, host.port, host.idle_window_seconds) == ("10.0.0.1", "ann", 2222, None)
    assert cli.main(["hosts", "edit", "box"]) == ExitCode.USAGE
    assert "nothing to change" in capsys.readouterr().err
    assert cli.main(["hosts", "edit", "nowhere", "--port", "1"]) == ExitCode.NO_HOST


@pytest.mark.parametrize(("argv", "words"), [
    (["--port", "70000"], "--port: must be at most 65535 (got 70000)"),
    (["--idle-window", "-5"], "--idle-window: must be more than 0 (got -5)"),
    (["--user", "two words"], "--user: must be a non-empty word without spaces"),
])
def test_a_refused_value_names_the_flag_typed(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hosts", "add", "box", "--provider", "ssh", *argv]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"workroom: invalid host: {words}"), err
    assert "pydantic" not in err and "type=" not in err and "errors.pydantic.dev" not in err


def test_names_in_wide_characters_keep_the_list_aligned(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("box1", "箱子一号", "ｂｏｘ"):
        assert cli.main(["hosts", "add", name, "--provider", "ssh", "--host", "10.0.0.1"]) == 0
    capsys.readouterr()
    assert cli.main(["hosts", "list"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "ssh" in line]
    assert len(lines) == 3
    starts = {cells(line[:line.index("ssh")]) for line in lines}
    assert len(starts) == 1, lines  # the provider column starts at the same cell on every line


def test_every_path_of_json_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["why", "nowhere", "--json"]) == ExitCode.NO_HOST
    said = json.loads(capsys.readouterr().out)
    assert said["error"]["exit_code"] == ExitCode.NO_HOST and "nowhere" in said["error"]["message"]
    assert cli.main(["why", "nowhere", "--since", "9y", "--json"]) == ExitCode.USAGE
    assert json.loads(capsys.readouterr().out)["error"]["title"] == "Usage"
    assert cli.main(["hosts", "remove", "nowhere", "--json"]) == ExitCode.NO_HOST
    assert "error" in json.loads(capsys.readouterr().out)
    assert cli.main(["status", "--json", "--no-such-flag"]) == ExitCode.USAGE
    assert json.loads(capsys.readouterr().out)["error"]["title"] == "Usage"
