"""The add-host picker offers Coder workspaces and codespaces as what they are: entries of ~/.ssh/config whose
ProxyCommand is the platform's own stdio tunnel (as `coder config-ssh` and `gh codespace ssh --config` write them),
and the boxes the platforms' own lists name (a `Host coder.*` block names none), each saying why it offers the
platform's provider. The CLIs are fakes on PATH (tests/fixtures/fake_platforms.py: the real ones need a Coder
deployment and GitHub); the dialog and the app's controller are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.fake_platforms import Box, FakePlatform
from gui_helpers import wait_for
from workroom.ui.ssh_aliases import scan_config

pytestmark = pytest.mark.gui

CODER_CONFIG_SSH = """# ------------START-CODER-----------
# This section is managed by coder. DO NOT EDIT.
#
# You should not hand-edit this section unless you are removing it, all
# changes will be lost when running "coder config-ssh".
#
# Last config-ssh options:
#
Host coder.*
\tConnectTimeout=0
\tStrictHostKeyChecking=no
\tUserKnownHostsFile=/dev/null
\tLogLevel ERROR
\tProxyCommand /usr/local/bin/coder --global-config /home/u/.config/coderv2 ssh --stdio --ssh-host-prefix coder. %h
# ------------END-CODER------------
"""
OLD_CODER_BLOCK = """Host coder.legacy
   HostName coder.legacy
   ProxyCommand "/opt/coder/bin/coder" --global-config "/home/u/.config/coderv2" ssh --stdio legacy
   StrictHostKeyChecking=no
"""
GH_CONFIG = """Host cs.monalisa-fuzzy-x5gq.main
\tUser codespace
\tProxyCommand /usr/bin/gh cs ssh -c monalisa-fuzzy-x5gq --stdio -- -i /home/u/.ssh/codespaces.auto
\tUserKnownHostsFile=/dev/null
\tStrictHostKeyChecking no
\tLogLevel quiet
\tControlMaster auto
\tIdentityFile /home/u/.ssh/codespaces.auto

"""


def user_config(home: Path) -> Path:
    ssh = home / ".ssh"
    ssh.mkdir(parents=True)
    config = ssh / "config"
    config.write_text("Host devbox\n  HostName 10.0.0.2\n" + CODER_CONFIG_SSH + OLD_CODER_BLOCK + GH_CONFIG)
    return config


def test_config_ssh_output_is_recognised_by_its_proxycommand(tmp_path: Path) -> None:
    scan = scan_config(user_config(tmp_path))
    by_alias = {e.alias: e for e in scan.entries}
    assert set(by_alias) == {"devbox", "coder.legacy", "cs.monalisa-fuzzy-x5gq.main"}
    assert by_alias["devbox"].provider is None
    legacy = by_alias["coder.legacy"]
    assert (legacy.provider, legacy.reference, legacy.name) == ("coder", {"workspace": "legacy"}, "legacy")
    assert "`coder ssh --stdio`" in legacy.why and "starts a stopped workspace" in legacy.why
    codespace = by_alias["cs.monalisa-fuzzy-x5gq.main"]
    assert (codespace.provider, codespace.reference, codespace.user) == (
        "codespaces", {"codespace": "monalisa-fuzzy-x5gq"}, "codespace")
    assert scan.prefixes == {"coder": "coder."}  # the wildcard block names no workspace: only its prefix


def test_the_picker_lists_the_platforms_boxes_and_fills_the_platforms_provider(
        window: Any, qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_platform: FakePlatform,
        run: Any) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    user_config(tmp_path)
    fake_platform.add(Box(name="myws", platform="coder", state="stopped"))
    fake_platform.add(Box(name="monalisa-fuzzy-x5gq", platform="codespaces", state="Shutdown"))
    dialog = window.open_add_dialog()

    def labels() -> list[str]:
        return [dialog.alias_picker.itemText(i) for i in range(dialog.alias_picker.count())]

    run(wait_for(lambda: any("myws" in label for label in labels()), 20, "the platforms' lists in the picker"))
    index = next(i for i, label in enumerate(labels()) if label.startswith("coder.myws"))
    assert "from its list" in labels()[index]
    dialog.alias_picker.setCurrentIndex(index)
    dialog.alias_picker.activated.emit(index)
    assert dialog.inputs["provider"].currentData() == "coder"
    assert dialog.inputs["ref_workspace"].text() == "myws" and dialog.inputs["name"].text() == "myws"
    assert dialog.picker_note.isVisibleTo(dialog) and "Offered as a coder host" in dialog.picker_note.text()
    index = next(i for i, label in enumerate(labels()) if label.startswith("cs.monalisa"))
    dialog.alias_picker.activated.emit(index)
    assert dialog.inputs["provider"].currentData() == "codespaces"
    assert dialog.inputs["user"].text() == "codespace"
    assert "gh codespace ssh --stdio" in dialog.picker_note.text()
    dialog.reject()
    # Listing read the platforms, and started nothing.
    assert fake_platform.events_of("start") == []
    assert {c["argv"][0] for c in fake_platform.calls} <= {"list", "codespace"}
