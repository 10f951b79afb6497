"""The ssh_config reader's parsing rules and its errors (the behaviour itself is held against `ssh -G` in
tests/integration/remote/test_ssh_config_vs_openssh.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from workroom.remote.ssh_config import SshConfigError, resolve_target
from workroom.remote.ssh_config_file import (
    SshConfigFileError,
    expand_tokens,
    match_pattern_list,
    split_args,
    split_keyword,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("line", "expected"), [
    ("Host a", ("host", "a")),
    ("  HostName=example.com", ("hostname", "example.com")),
    ("User = bob", ("user", "bob")),
    ("Port\t22", ("port", "22")),
    ("# a comment", None),
    ("   ", None),
])
def test_keyword_forms(line: str, expected: tuple[str, str] | None) -> None:
    assert split_keyword(line) == expected


def test_arguments_quotes_escapes_and_comments() -> None:
    assert split_args('"my key" plain \'single q\' esc\\ aped # trailing') == ["my key", "plain", "single q",
                                                                            "esc aped"]
    with pytest.raises(SshConfigFileError):
        split_args('"unterminated')


def test_pattern_lists_negation_wins() -> None:
    assert match_pattern_list("db1.corp", "*.corp,!bastion.corp")
    assert not match_pattern_list("bastion.corp", "*.corp,!bastion.corp")
    assert not match_pattern_list("other", "!bastion.corp")  # a negation alone never matches
    assert match_pattern_list("HOST", "host", fold_case=True)


def test_tokens() -> None:
    assert expand_tokens("%h-%%-%p", {"h": "box", "p": "22"}) == "box-%-22"
    with pytest.raises(SshConfigFileError):
        expand_tokens("%z", {})


def _resolve(tmp_path: Path, text: str, target: str = "x"):  # type: ignore[no-untyped-def]
    config = tmp_path / "config"
    config.write_text(text)
    return resolve_target(target, config_path=config, home=tmp_path, default_identities=(), environ={})


def test_an_include_loop_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "loop.conf").write_text(f"Include {tmp_path}/loop.conf\n")
    with pytest.raises(SshConfigError) as error:
        _resolve(tmp_path, f"Include {tmp_path}/loop.conf\n")
    assert "nested too deep" in error.value.message


def test_unknown_match_criterion_and_missing_values_are_errors(tmp_path: Path) -> None:
    with pytest.raises(SshConfigError, match="Match criterion"):
        _resolve(tmp_path, "Match bogus x\n  User y\n")
    with pytest.raises(SshConfigError, match="needs an argument"):
        _resolve(tmp_path, "Match host\n")
    with pytest.raises(SshConfigError, match="has no value"):
        _resolve(tmp_path, "User\n")


def test_a_newer_match_criterion_never_applies_but_the_file_still_works(tmp_path: Path) -> None:
    target = _resolve(tmp_path, "Match localnetwork 10.0.0.0/8\n  User office\nHost x\n  User fine\n")
    assert target.user == "fine"


def test_match_exec_is_not_run_once_the_line_is_already_false(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    target = _resolve(tmp_path, f"Match host nothere exec \"touch {marker}\"\n  User never\n")
    assert not marker.exists() and target.user != "never"


def test_identity_agent_forms(tmp_path: Path) -> None:
    text = "Host a\n  IdentityAgent ~/a.sock\nHost b\n  IdentityAgent $MY_SOCK\nHost c\n  IdentityAgent none\n"
    config = tmp_path / "config"
    config.write_text(text)

    def agent(alias: str) -> str | None:
        return resolve_target(alias, config_path=config, home=tmp_path, default_identities=(),
                              environ={"MY_SOCK": "/run/my.sock", "SSH_AUTH_SOCK": "/run/env.sock"}).identity_agent

    assert agent("a") == f"{tmp_path}/a.sock"
    assert agent("b") == "/run/my.sock"
    assert agent("c") is None
    assert agent("d") == "/run/env.sock"


def test_an_unset_environment_variable_in_a_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SshConfigError, match="not set"):
        _resolve(tmp_path, "IdentityFile ${NOPE}/key\n")


def test_command_keywords_keep_their_line_as_written(tmp_path: Path) -> None:
    """RemoteCommand/LocalCommand are shell text: an odd quote there is the shell's business, not ours."""
    target = _resolve(tmp_path, 'Host x\n  RemoteCommand echo "it\'s\n  LocalCommand printf \'%s\'\n  User ok\n')
    assert target.user == "ok"
