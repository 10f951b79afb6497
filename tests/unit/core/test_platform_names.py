"""A workspace's or codespace's name is held to its platform's own naming rule (core.platform_names) when a host
is added or edited and before every use: a name that could be read as a flag, reach another REST path or split
a command line never gets that far (docs/providers.md, "Names")."""

from __future__ import annotations

import pytest
from workroom.core.hosts import BoxNameError, Host, box_names, check_edited_host, check_new_host
from workroom.core.platform_names import coder_workspace_problem, codespace_problem

pytestmark = pytest.mark.unit

HOSTILE = ["../x", "-x", "a b", "x;y", "x\ny", "x" * 300, "", "a//b", "a/b/c", "a.b.c", "x%2F..", "a_b", "é"]


@pytest.mark.parametrize("name", ["ws1", "dev-box", "ann/dev-box", "ann/dev-box.main", "dev.agent-2", "A1" * 16])
def test_coder_names_as_coder_takes_them(name: str) -> None:
    assert coder_workspace_problem(name) is None


@pytest.mark.parametrize("name", [*HOSTILE, "-lead", "trail-", "a--b", "x" * 33, "ann/" + "x" * 33, "/ws", "ws."])
def test_coder_refuses_what_its_rule_does(name: str) -> None:
    assert coder_workspace_problem(name) is not None


@pytest.mark.parametrize("name", ["monalisa-fuzzy-space-x5gq7r", "octo-cat-9", "abc"])
def test_codespace_names_as_github_makes_them(name: str) -> None:
    assert codespace_problem(name) is None


@pytest.mark.parametrize("name", [*HOSTILE, "dev.box", "ann/box", "x" * 101])
def test_codespace_refuses_anything_else(name: str) -> None:
    assert codespace_problem(name) is not None


@pytest.mark.parametrize("provider,field", [("coder", "workspace"), ("codespaces", "codespace")])
@pytest.mark.parametrize("bad", ["../x", "-x", "x;y", "x" * 120])  # (over 255: refused as any reference is)
def test_a_host_is_refused_when_added_or_edited_and_at_use_but_still_loads(provider: str, field: str,
                                                                           bad: str) -> None:
    host = Host(name="box", provider=provider, reference={field: bad})  # loads: a hand-edited file is kept
    with pytest.raises(BoxNameError) as refused:
        check_new_host(host)
    assert repr(bad)[:40] in refused.value.message and f"--ref {field}=NAME" in refused.value.hint
    with pytest.raises(BoxNameError):
        box_names(host)  # at use: what every command line and URL is built from
    good = Host(name="box", provider=provider)
    assert box_names(good) == {field: "box"}  # the host's name stands for it
    with pytest.raises(BoxNameError):
        check_edited_host(good, host)
    # an old host with such a name can still be edited in other ways (it is refused at use, with words)
    assert check_edited_host(host, host.model_copy(update={"idle_window_seconds": 60.0})) is not None


def test_the_hosts_own_name_is_held_to_the_rule_when_it_stands_for_the_box() -> None:
    with pytest.raises(BoxNameError) as refused:
        check_new_host(Host(name="my_box", provider="coder"))  # a fine host name, not a workspace's
    assert "the host's name" in refused.value.message
    assert check_new_host(Host(name="my_box", provider="coder", reference={"workspace": "dev"})) is not None
