"""The app's side of the agent's proof of who it is (the agent's side: wr_agent/agent_key.py; why and how:
docs/security.md, "The agent proves who it is", and docs/protocol.md, "Who answers").

Every link sends a fresh challenge with the `subscribe` it sends at once, and keeps the link only when the
answer carries HMAC-SHA256(key, "wr-agent proof 1" NUL challenge) for the key the app holds for that agent
(providers/agent_keys.py). The build hash in the hello says which code answers and anyone can repeat it; only
the login user (and root) can read the key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from workroom.remote.host_answers import AgentInstallError

PROOF_LABEL = b"wr-agent proof 1\0"
ID_LABEL = "wr-agent key id\0"
NO_KEY_ID = "-"
"""The key id the probe is told when the app has no key for the agent: any key the agent has differs."""
_HEX64 = re.compile(r"[0-9a-f]{64}")


def is_key(value: object) -> bool:
    """A key as the agent writes it: 64 lowercase hex digits (32 random bytes)."""
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def new_challenge() -> str:
    return secrets.token_hex(32)


def key_id(key: str | None) -> str:
    """Names a key without telling it (`NO_KEY_ID` for none): the probe answers with the agent's key only when
    its id differs."""
    if key is None:
        return NO_KEY_ID
    return hashlib.sha256((ID_LABEL + key).encode("ascii")).hexdigest()[:32]


def proof_of(key: str, challenge: str) -> str:
    return hmac.new(bytes.fromhex(key), PROOF_LABEL + challenge.encode("ascii"), "sha256").hexdigest()


def proves(key: str | None, challenge: str, proof: str | None) -> bool:
    """Whether `proof` answers `challenge` with `key` (False when either is missing)."""
    return key is not None and proof is not None and hmac.compare_digest(proof_of(key, challenge), proof)


class AgentNotProven(AgentInstallError):
    """The agent at the socket answered as this app's build but could not prove it is the agent the app installed:
    nothing it said was shown or acted on, and nothing was sent to it."""

    def __init__(self, socket_path: str, host_name: str) -> None:
        super().__init__(
            "The agent did not prove who it is",
            f"The agent at {socket_path} on {host_name} said it is this app's build but could not prove it is the "
            "agent this app installed (it did not answer with the agent's key), so the app did not trust it: "
            "another user of the host may be running an agent in its place.",
            f"On the host, check who runs the process serving {socket_path} (its pid is in {socket_path}.lock), "
            "stop it, then connect again.",
        )
