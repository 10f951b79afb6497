"""The agent's key (wr_agent/agent_key.py): made private, read only from a file of this user's alone, replaced
when damaged; the install probe makes it (and the state folder) when missing and answers with it only when the
app's is not it; the app's side of the proof (remote/agent_proof.py) agrees with the agent's."""

import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st
from workroom.remote import agent_proof
from wr_agent import agent_key, install_probe

pytestmark = pytest.mark.unit
hex64 = st.binary(min_size=32, max_size=32).map(bytes.hex)


def sock_in(home):
    folder = home / ".local/state/wr-agent"
    folder.mkdir(parents=True, mode=0o700)
    return str(folder / "agent.sock")


def test_a_key_is_made_private_once_and_read_back(home):
    sock = sock_in(home)
    assert agent_key.read_key(sock) is None
    key = agent_key.agent_key(sock)
    assert agent_key.is_hex(key) and agent_key.agent_key(sock) == key
    assert stat.S_IMODE(os.stat(sock + ".key").st_mode) == 0o600
    assert [n for n in os.listdir(os.path.dirname(sock)) if ".tmp." in n] == []


@pytest.mark.parametrize("damage", ["short", "open", "link"])
def test_a_damaged_or_shared_key_file_is_not_read_and_is_replaced(home, tmp_path, damage):
    sock = sock_in(home)
    path = sock + ".key"
    if damage == "short":
        with open(path, "w") as f:
            f.write("abc\n")
    elif damage == "open":
        with open(path, "w") as f:
            f.write("a" * 64 + "\n")
        os.chmod(path, 0o644)  # others could have read it
    else:
        (tmp_path / "elsewhere").write_text("b" * 64 + "\n")
        os.symlink(str(tmp_path / "elsewhere"), path)
    assert agent_key.read_key(sock) is None
    key = agent_key.agent_key(sock)
    assert agent_key.is_hex(key) and key not in ("a" * 64, "b" * 64)
    assert not os.path.islink(path) and (tmp_path / "elsewhere").exists() is (damage == "link")


def test_the_probe_makes_the_folder_and_key_and_answers_with_it_only_when_the_apps_differs(home):
    bundle, sock = (str(home / ".local/share/wr-agent/wr-agent.pyz"), str(home / ".local/state/wr-agent/agent.sock"))
    answer = install_probe.probe(bundle, sock, "0" * 64, known_key="-")
    key = answer["key"]
    assert agent_key.is_hex(key) and agent_key.read_key(sock) == key
    assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
    assert "key" not in install_probe.probe(bundle, sock, "0" * 64, known_key=agent_proof.key_id(key))
    assert install_probe.probe(bundle, sock, "0" * 64, known_key=agent_proof.key_id("c" * 64))["key"] == key
    assert "key" not in install_probe.probe(bundle, sock, "0" * 64)  # not asked: not looked at


@given(key=hex64, challenge=hex64)
def test_both_sides_prove_and_name_a_key_alike(key, challenge):
    proof = agent_key.proof_of(key, challenge)
    assert agent_proof.proves(key, challenge, proof)
    assert agent_key.key_id(key) == agent_proof.key_id(key)


def test_a_proof_with_another_key_or_challenge_or_none_proves_nothing():
    key, other, challenge = "a" * 64, "b" * 64, agent_proof.new_challenge()
    proof = agent_key.proof_of(key, challenge)
    assert not agent_proof.proves(other, challenge, proof)
    assert not agent_proof.proves(key, agent_proof.new_challenge(), proof)
    assert not agent_proof.proves(key, challenge, None) and not agent_proof.proves(None, challenge, proof)
