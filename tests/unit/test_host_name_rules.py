"""Names and addresses of a host being added: nothing a program on the host would take for an option."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


def test_a_host_named_like_an_option_is_refused_when_added_with_a_clear_message() -> None:
    from workroom.core.hosts import Host, HostsFile, UnsafeHostNameError

    hosts = HostsFile(hosts=())
    with pytest.raises(UnsafeHostNameError) as e:
        hosts.add(Host(name="--log", provider="ssh", address="box.example"))
    assert "cannot start with '-'" in e.value.message and "--log" in e.value.message
    with pytest.raises(UnsafeHostNameError):
        hosts.add(Host(name="box", provider="ssh", address="-oProxyCommand=x"))
    # A hosts file that already holds such a host still loads (nothing is set aside for it).
    loaded = HostsFile.model_validate({"hosts": [{"name": "-old", "provider": "ssh", "address": "a.example"}]})
    assert loaded.names() == ["-old"]


def test_an_edit_keeps_the_name_and_checks_only_what_it_brings_in() -> None:
    from workroom.core.hosts import Host, HostsFile, RenamedHostError, UnsafeHostNameError

    loaded = HostsFile.model_validate({"hosts": [{"name": "-old", "provider": "ssh", "address": "-a.example",
                                                  "hourly_price": 2}]})
    edited = loaded.edit("-old", Host(name="-old", provider="ssh", address="-a.example", port=2222))
    assert edited.require("-old").port == 2222  # what the file already held stays as it was
    with pytest.raises(UnsafeHostNameError) as e:
        loaded.edit("-old", Host(name="-old", provider="ssh", address="a.example", user="-l"))
    assert e.value.what == "user" and "Pick a user" in e.value.hint
    with pytest.raises(RenamedHostError):
        loaded.edit("-old", Host(name="old", provider="ssh", address="-a.example"))
    assert loaded.require("-old").port is None  # a refused edit changes nothing
