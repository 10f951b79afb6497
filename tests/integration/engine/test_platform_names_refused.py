"""A hostile workspace or codespace name never reaches the platform's command line or URL: refused with words when
a host is added (`../x`, `-x`, `a b`, `x;y`, a newline, 300 characters), and, for a hosts file edited by hand that
holds one, refused at every use — status, connect, connect --wake, keep — while the file still loads.

The real `coder` and `gh` talk to services that cannot run here: the fake CLIs on PATH (tests/fixtures/
fake_platforms.py) record every argv they are given, which is what this test reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workroom import cli
from workroom.core.hosts import Host, HostsFile
from workroom.paths import app_paths
from workroom.storage import save_hosts

pytestmark = pytest.mark.integration

HOSTILE = ["../x", "-x", "a b", "x;y", "x\ny", "x" * 300]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.mark.parametrize("provider,field", [("coder", "workspace"), ("codespaces", "codespace")])
def test_a_hostile_name_is_refused_when_added_and_at_every_use(fake_platform, provider: str, field: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    for i, bad in enumerate(HOSTILE):
        code = cli.main(["hosts", "add", f"h{i}", "--provider", provider, "--ref", f"{field}={bad}"])
        assert code != 0, bad
        err = capsys.readouterr().err
        assert "Traceback" not in err and ("not a name the platform takes" in err.lower() or field in err), err
    # A hosts file edited by hand: the names load (nothing set aside), and are refused at each use.
    hosts = tuple(Host(name=f"h{i}", provider=provider, reference={field: bad})
                  for i, bad in enumerate(["../x", "-x", "x;y"]))
    save_hosts(app_paths().ensure(), HostsFile(hosts=hosts))
    for argv in (["status", "--live"], ["status", "--live", "--json"], ["connect", "h0"], ["connect", "h1", "--wake"],
                 ["keep", "h2", "--wake"]):
        code = cli.main(argv)
        out = capsys.readouterr()
        assert "Traceback" not in out.err + out.out
        if argv[0] == "connect" or argv[0] == "keep":
            assert code != 0 and "not passed to the platform" in out.err, (argv, out.err)
    for call in fake_platform.calls:
        words = json.dumps(call["argv"])
        for bad in ("..", '"-x"', "x;y"):
            assert bad not in words, call
