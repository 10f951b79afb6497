"""A platform box's SSH key is vouched for by the platform's channel (docs/security.md, "Platform boxes"): accepted
without a question and without a known_hosts line, pinned within one run of the box, new with a new run."""

from __future__ import annotations

import paramiko
import pytest
from workroom.remote.host_keys import ChangedHostKey, ChannelVouchedKeys, KeyPins, KnownHostKey, KnownHostsError

pytestmark = pytest.mark.unit


def test_pinned_within_a_run_and_free_with_a_new_one() -> None:
    pins = KeyPins()
    first = paramiko.RSAKey.generate(1024)
    other = paramiko.RSAKey.generate(1024)
    run7 = ChannelVouchedKeys(pins, "7")
    assert isinstance(run7.verify("coder.ws1", 22, first), KnownHostKey)
    assert isinstance(run7.verify("coder.ws1", 22, first), KnownHostKey)
    changed = ChannelVouchedKeys(pins, "7").verify("coder.ws1", 22, other)
    assert isinstance(changed, ChangedHostKey) and changed.expected_fingerprints  # refused within the run
    assert isinstance(ChannelVouchedKeys(pins, "8").verify("coder.ws1", 22, other), KnownHostKey)  # rebuilt
    assert run7.known_key_types("coder.ws1", 22) == [] and run7.with_files([]) is run7
    with pytest.raises(KnownHostsError):
        run7.trust("coder.ws1", 22, first)
    assert isinstance(ChannelVouchedKeys(pins, "8").verify("coder.ws1", 22, other), KnownHostKey)
    assert isinstance(ChannelVouchedKeys(pins, "8").verify("coder.ws1", 22, first), ChangedHostKey)
    assert run7.forget("coder.ws1", 22) == 1 and run7.forget("coder.ws1", 22) == 0
    assert isinstance(ChannelVouchedKeys(pins, "8").verify("coder.ws1", 22, first), KnownHostKey)  # forgotten
