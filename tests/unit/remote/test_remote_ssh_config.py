"""~/.ssh/config resolution: the same answers `ssh -G` would give for the keywords we honour."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
from workroom.remote.ssh_config import SshConfigError, resolve_target

pytestmark = pytest.mark.unit

CONFIG = """
Host box
  HostName 10.0.0.5
  User bob
  Port 2222
  IdentityFile ~/.ssh/id_box
  IdentityFile /keys/second

Host viajump
  HostName inner.example
  ProxyJump jump

Host jump
  HostName jump.example
  User hopper
  Port 2200
  IdentityFile /keys/jump

Host chain
  HostName deep.example
  ProxyJump alice@first:2201,second

Host loop-a
  ProxyJump loop-b
Host loop-b
  ProxyJump loop-a

Host noproxy
  ProxyJump none

Host viacommand
  HostName hidden.example
  ProxyCommand nc %h %p

Host strict
  IdentitiesOnly yes

Host badport
  Port eighty
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.write_text(CONFIG)
    return path


def test_alias_takes_hostname_user_port_and_identity_files(config: Path) -> None:
    target = resolve_target("box", config_path=config, default_identities=[Path("/d/id")])
    assert (target.alias, target.hostname, target.port, target.user) == ("box", "10.0.0.5", 2222, "bob")
    assert target.identity_files == (Path("~/.ssh/id_box").expanduser(), Path("/keys/second"))
    assert target.proxy_jump is None and target.proxy_command is None
    assert target.describe() == "box (bob@10.0.0.5:2222)"


def test_explicit_overrides_win_and_explicit_identity_is_tried_first(config: Path) -> None:
    target = resolve_target("box", port=22, user="carol", identity="/keys/mine", config_path=config)
    assert (target.port, target.user) == (22, "carol")
    assert target.identity_files[0] == Path("/keys/mine")
    assert Path("/keys/second") in target.identity_files


def test_unknown_host_uses_defaults(config: Path) -> None:
    target = resolve_target("plain.example", config_path=config, default_identities=[Path("/d/id_ed25519")])
    assert (target.hostname, target.port, target.user) == ("plain.example", 22, getpass.getuser())
    assert target.identity_files == (Path("/d/id_ed25519"),)
    assert target.describe() == f"{getpass.getuser()}@plain.example:22"


def test_user_at_host_form(config: Path) -> None:
    target = resolve_target("dave@box", config_path=config)
    assert (target.user, target.hostname) == ("dave", "10.0.0.5")


def test_missing_config_file_is_an_empty_config(tmp_path: Path) -> None:
    target = resolve_target("h.example", config_path=tmp_path / "absent", default_identities=[])
    assert (target.hostname, target.port, target.identity_files) == ("h.example", 22, ())


def test_proxyjump_alias_is_resolved_through_the_config(config: Path) -> None:
    target = resolve_target("viajump", config_path=config, default_identities=[])
    assert target.hostname == "inner.example"
    jump = target.proxy_jump
    assert jump is not None
    assert (jump.alias, jump.hostname, jump.user, jump.port) == ("jump", "jump.example", "hopper", 2200)
    assert jump.identity_files == (Path("/keys/jump"),)


def test_proxyjump_list_chains_hops_in_order(config: Path) -> None:
    target = resolve_target("chain", config_path=config, default_identities=[])
    second = target.proxy_jump
    assert second is not None and second.hostname == "second"
    first = second.proxy_jump
    assert first is not None and (first.user, first.hostname, first.port) == ("alice", "first", 2201)
    assert first.proxy_jump is None


def test_proxyjump_loop_is_a_clear_error(config: Path) -> None:
    with pytest.raises(SshConfigError) as loop:
        resolve_target("loop-a", config_path=config)
    assert "loop-a -> loop-b -> loop-a" in loop.value.message


def test_proxyjump_none_and_proxycommand(config: Path) -> None:
    assert resolve_target("noproxy", config_path=config).proxy_jump is None
    target = resolve_target("viacommand", config_path=config)
    assert target.proxy_command == "nc hidden.example 22"


def test_identities_only(config: Path) -> None:
    assert resolve_target("strict", config_path=config).identities_only is True
    assert resolve_target("box", config_path=config).identities_only is False


@pytest.mark.parametrize("bad", ["", "two words", "user@"])
def test_bad_target_is_refused(config: Path, bad: str) -> None:
    with pytest.raises(SshConfigError):
        resolve_target(bad, config_path=config)


def test_bad_ports_are_refused(config: Path) -> None:
    with pytest.raises(SshConfigError, match="eighty"):
        resolve_target("badport", config_path=config)
    with pytest.raises(SshConfigError, match="1–65535"):
        resolve_target("box", port=70000, config_path=config)


def test_unreadable_config_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_bytes(b"Host x\n  HostName \xff\xfe\n")
    with pytest.raises(SshConfigError) as bad:
        resolve_target("x", config_path=path)
    assert str(path) in bad.value.message
