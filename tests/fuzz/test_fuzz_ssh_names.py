"""Generated host and user names against the real `ssh -G`: the app's rule (core.ssh_names) accepts exactly
what this machine's OpenSSH client accepts, and a name it refuses never reaches a `Match exec`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from workroom.core.hosts import UnsafeHostNameError
from workroom.core.ssh_names import SshNameKind, ssh_accepts
from workroom.remote.ssh_config import SshConfigError, resolve_target

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")]

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
ALPHABET = [*"ab.-_@%:/*?!=#~+ \t\n\x01\x1b\x7f", *"'`\"$\\;&<>|(){},", "é", "\u202e"]
names = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=12).map("".join)


def _ssh_refuses(kind: SshNameKind, value: str) -> bool:
    args = ["-l", value, "box.example"] if kind is SshNameKind.USER else ["--", value]
    done = subprocess.run(["ssh", "-G", "-F", "/dev/null", *args], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    # `@ ` and `@x`: an empty user before the last '@': ssh refuses it with its usage, not the characters' words.
    return "contains invalid characters" in done.stderr or done.stderr.startswith("usage: ssh")


@FUZZ
@given(value=names, kind=st.sampled_from(list(SshNameKind)))
@example(value="@ ", kind=SshNameKind.HOST)  # found by a CI run: ssh answers with its usage
@example(value="@", kind=SshNameKind.HOST)  # an empty user before the last '@': ssh's usage too
@example(value="@@", kind=SshNameKind.HOST)  # the last '@' is not the first: user "@", accepted
def test_the_rule_is_ssh_s_rule(value: str, kind: SshNameKind) -> None:
    assert ssh_accepts(kind, value) is not _ssh_refuses(kind, value)


@FUZZ
@given(host=names, user=names | st.none())
@example(host="a ", user=None)  # a trailing space: ssh refuses it; the app once stripped it and went on
def test_a_refused_name_never_reaches_match_exec(tmp_path_factory: pytest.TempPathFactory, host: str,
                                                 user: str | None) -> None:
    folder = tmp_path_factory.mktemp("names")
    marker = folder / "marker"
    config = folder / "config"
    config.write_text(f'Match exec "echo ran >> {marker}"\n  Port 2222\n')
    accepted = ssh_accepts(SshNameKind.HOST, host) and (user is None or ssh_accepts(SshNameKind.USER, user))
    try:
        resolve_target(host, user=user, config_path=config, home=Path(folder), default_identities=[])
        resolved = True
    except UnsafeHostNameError:
        resolved = False
    except SshConfigError:  # whitespace in the host: not a host name at all
        resolved = False
    assert marker.exists() is resolved
    if not accepted:
        assert not resolved
