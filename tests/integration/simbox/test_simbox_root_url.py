"""The simbox provider takes the simulator's root URL (what `workroom-simbox up --json` prints first, and the
dialog's example) as well as a box's own page: the box is the one the simulator proxies on the host's SSH port.
Real simulator (tools/simbox), real provider code; nothing connects to the box."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.simboxes import simulated_boxes
from workroom.agent_bundle import AgentBundle
from workroom.core.hosts import Host
from workroom.paths import app_paths
from workroom.providers import make_provider
from workroom.providers.base import BoxState, ProviderContext, ProviderUnreadable

pytestmark = [pytest.mark.integration, pytest.mark.root]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    with simulated_boxes(tmp_path_factory.mktemp("sim"), 2, 30.0) as boxes:
        yield boxes


def provider(tmp_path: Path) -> Any:
    paths = app_paths({"WORKROOM_HOME": str(tmp_path / "home")}).ensure()
    return make_provider("simbox", ProviderContext(bundle=AgentBundle(b"x", "0" * 64, "0.0.0"), known_hosts=None,
                                                   state_dir=paths.state_dir))


def host(info: dict[str, Any], box: dict[str, Any], url: str) -> Host:
    return Host(name=box["name"], provider="simbox", address="127.0.0.1", port=box["ssh_port"], user=box["user"],
                reference={"health_url": url})


@pytest.mark.parametrize("root", ["{root}", "{root}/"])
def test_the_root_url_finds_each_box_by_its_ssh_port(sim: Any, tmp_path: Path, root: str) -> None:
    import simbox

    home, info = sim
    simbox.sleep("box1", home=home)
    simbox.wake("box2", home=home)
    url = root.format(root=info["health_url"].rstrip("/"))
    p = provider(tmp_path)
    states = {b["name"]: asyncio.run(p.box_state(host(info, b, url))) for b in info["boxes"]}
    assert states == {"box1": BoxState.ASLEEP, "box2": BoxState.AWAKE}
    reading = asyncio.run(p.read_idle_clock(host(info, info["boxes"][1], url)))
    assert reading is not None and reading.window_seconds == 30.0
    assert simbox.box_status("box1", home=home)["state"] == "asleep"  # looking woke nothing


def test_a_root_url_listing_no_box_on_the_hosts_port_says_so(sim: Any, tmp_path: Path) -> None:
    _home, info = sim
    stray = dict(info["boxes"][0], ssh_port=1)
    with pytest.raises(ProviderUnreadable, match="lists no box whose SSH port is 1"):
        asyncio.run(provider(tmp_path).box_state(host(info, stray, info["health_url"])))
