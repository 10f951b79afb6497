"""Hostile bytes in the files the agent and the app read: the agent's settings file, the app's hosts.json
and known_hosts files. Loading never raises past its documented error, and nothing on disk is lost: a
file that cannot be used is left as it was or kept aside byte for byte."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import paramiko
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workroom.core.hosts import HostsFile
from workroom.paths import HOME_ENV, app_paths
from workroom.remote.host_keys import ChangedHostKey, KnownHostKey, KnownHosts, UnknownHostKey
from workroom.storage import load_hosts
from wr_agent import settings as agent_settings

pytestmark = pytest.mark.unit

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**400), max_value=10**400) | st.floats()
    | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=24), kids, max_size=5),
    max_leaves=16,
)
file_bytes = st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v, allow_nan=True).encode())


@FUZZ
@given(data=file_bytes | st.fixed_dictionaries(
    {"ceiling_seconds": json_values, "prompt_timeout_seconds": json_values, "ask_at_ceiling": json_values}
).map(lambda v: json.dumps(v, allow_nan=True).encode()))
def test_the_agent_settings_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "agent.sock.settings"
        path.write_bytes(data)
        loaded, error = agent_settings.load(str(path))
        assert (loaded is None) != (error is None)
        if error is not None:
            assert error.startswith("settings file ") and len(error) < 2000
        else:
            assert 30 <= loaded.ceiling_seconds <= 2592000 and 30 <= loaded.prompt_timeout_seconds <= 2592000
        assert path.read_bytes() == data  # reported, never rewritten or removed


@FUZZ
@given(data=file_bytes | st.fixed_dictionaries({"hosts": st.lists(st.dictionaries(
    st.sampled_from(["name", "provider", "address", "port", "user", "identity", "idle_window_seconds"]),
    json_values, max_size=6), max_size=3)}).map(lambda v: json.dumps(v, allow_nan=True).encode()))
def test_the_app_hosts_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        paths = app_paths({HOME_ENV: d}).ensure()
        paths.hosts_file.write_bytes(data)
        loaded = load_hosts(paths, hostname="me")
        assert isinstance(loaded.value, HostsFile)
        if loaded.problem is None:
            assert paths.hosts_file.read_bytes() == data
        else:
            assert loaded.problem.title and loaded.problem.message and "Traceback" not in loaded.problem.message
            assert loaded.moved_aside_to is not None and loaded.moved_aside_to.read_bytes() == data


words = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40)
known_lines = st.one_of(
    words,
    st.builds(lambda m, p, t, b: " ".join(x for x in (m, p, t, b) if x),
              st.sampled_from(["", "@revoked", "@cert-authority", "@bogus"]),
              st.sampled_from(["box", "[box]:2222", "*", "!box,*", "|1|AAAA|BBBB", "|1|x|y|z", "b?x"]) | words,
              st.sampled_from(["ssh-ed25519", "ssh-rsa", "x"]) | words,
              st.sampled_from(["AAAAC3NzaC1lZDI1NTE5AAAAIA==", "!!!", ""]) | words),
)


def _key() -> paramiko.PKey:
    import io

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    pem = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(32)).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    return paramiko.Ed25519Key.from_private_key(io.StringIO(pem.decode()))


@FUZZ
@given(user_lines=st.lists(known_lines, max_size=6), app_lines=st.lists(known_lines, max_size=6),
       junk=st.binary(max_size=40))
def test_known_hosts_lines(user_lines: list[str], app_lines: list[str], junk: bytes) -> None:
    key = _key()
    with tempfile.TemporaryDirectory() as d:
        user_file, app_file = Path(d) / "user_known_hosts", Path(d) / "known_hosts"
        user_file.write_bytes("\n".join(user_lines).encode("utf-8") + b"\n" + junk)
        app_before = "\n".join(app_lines).encode("utf-8") + junk[:8]
        app_file.write_bytes(app_before)
        known = KnownHosts(app_file, user_file)
        verdict = known.verify("box", 22, key)
        assert isinstance(verdict, KnownHostKey | UnknownHostKey | ChangedHostKey)
        assert known.known_key_types("box", 22) is not None
        if isinstance(verdict, UnknownHostKey):
            known.trust("box", 22, key)
            after = app_file.read_bytes()
            assert after.startswith(app_before)  # every old line kept as it was
            assert isinstance(known.verify("box", 22, key), KnownHostKey)
