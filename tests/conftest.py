"""Shared fixtures for every tier: real sshd, network-namespace boxes, an in-memory keyring; and the two
platform marks: `mac` (skipped off macOS with "needs macOS") and `linux` (skipped elsewhere with its reason).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fixtures import netns
from fixtures import sshd as sshd_mod
from fixtures.fake_platforms import FakePlatform
from fixtures.memory_keyring import MemoryKeyring

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

NEEDS_MACOS = "needs macOS"

# Fixtures that only Linux can give, and why: a test that uses one is marked `linux` at collection, so the
# Mac's CI selects it away by marker (`not linux`) and a plain run on a Mac skips it with this reason.
LINUX_FIXTURES = {
    "make_netns_box": "network namespaces (ip netns, nftables)",
    "sshd_server": "the loopback OpenSSH server's far side is this computer, checked as a Linux host "
                   "(throwaway users by useradd, the agent's /proc sampler)",
}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An agent of this computer that a test's command or app left behind (its home in this run's temporary
    folders) is ended, and said: the engine tier's `app_home` kills its agents."""
    from fixtures.procs import end_local_agents_under

    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or not os.path.isdir("/proc/self"):
        return
    base = factory.getbasetemp()
    agents = end_local_agents_under(base)
    if agents:
        print(f"\nended {len(agents)} agent process(es) of this computer left by tests: pids {agents}")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marks added here count there
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    on_mac, on_linux = sys.platform == "darwin", sys.platform.startswith("linux")
    for item in items:
        names = getattr(item, "fixturenames", ())
        for fixture, why in LINUX_FIXTURES.items():
            if fixture in names and item.get_closest_marker("linux") is None:
                item.add_marker(pytest.mark.linux(reason=why))
        if item.get_closest_marker("mac") is not None and not on_mac:
            item.add_marker(pytest.mark.skip(reason=NEEDS_MACOS))
        linux = item.get_closest_marker("linux")
        if linux is not None and not on_linux:
            item.add_marker(pytest.mark.skip(reason=f"needs Linux: {linux.kwargs.get('reason', 'Linux only')}"))


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: network namespaces (CI runs as root)")


@pytest.fixture(scope="session")
def sshd_server() -> Iterator[sshd_mod.SshdServer]:
    """One real OpenSSH server for the session (see fixtures/sshd.py)."""
    if sshd_mod.find_sshd() is None:
        pytest.skip("OpenSSH server not installed: run ./dev setup")
    server = sshd_mod.launch(sshd_mod.make_workdir())
    try:
        yield server
    finally:
        sshd_mod.shutdown(server)


@pytest.fixture
def sshd(sshd_server: sshd_mod.SshdServer) -> Iterator[sshd_mod.SshdServer]:
    """The session's sshd, with the test user's home emptied and its processes gone before each test."""
    sshd_server.clean_home()
    yield sshd_server
    sshd_server.clean_home()


@pytest.fixture
def sshd_own_network(sshd_server: sshd_mod.SshdServer, make_netns_box: Callable[..., netns.NetnsBox],
                     tmp_path: Path) -> Iterator[sshd_mod.SshdServer]:
    """The test user's sshd inside a network namespace of its own (listening on the box's address): the agent it
    starts sees the box's network alone, as in a container, a codespace or a workspace. On this machine's own
    network it would read the other tiers' test boxes (their links' bytes) as its host's traffic."""
    sshd_server.clean_home()
    server = sshd_mod.launch_variant(sshd_server, tmp_path / "sshd-own-network", netns=make_netns_box())
    try:
        yield server
    finally:
        sshd_mod.stop_variant(server)
        sshd_server.clean_home()


@pytest.fixture
def make_netns_box() -> Iterator[Callable[..., netns.NetnsBox]]:
    """Factory for boxes; every box made is deleted at teardown."""
    _needs_root()
    made: list[netns.NetnsBox] = []

    def make(*, ipv6: bool = False) -> netns.NetnsBox:
        box = netns.create(ipv6=ipv6)
        made.append(box)
        return box

    yield make
    for box in made:
        netns.destroy(box)


@pytest.fixture
def netns_box(make_netns_box: Callable[..., netns.NetnsBox]) -> netns.NetnsBox:
    return make_netns_box()


@pytest.fixture(autouse=True)
def fresh_keyring() -> Iterator[None]:
    """Every test starts on a fresh in-memory keyring set here, never one keyring's discovery chose: discovery picks
    among every backend class imported so far, so a test module's own keyring (one whose get blocks as an unlock
    dialog does) became, chained with the rest, the keyring of every test collected after it — an engine test's
    keys then waited 10 s and its reconnect went the probe's way (CI only, where the tiers collect those modules
    together). Tests that need another keyring set theirs (`memory_keyring`, a subprocess's PYTHON_KEYRING_BACKEND)."""
    import keyring

    keyring.set_keyring(MemoryKeyring())
    yield


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    import keyring

    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def fake_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakePlatform:
    """The fake `coder` and `gh` first on PATH, sharing one state (tests/fixtures/fake_platforms.py): the real
    CLIs talk to cloud services that cannot run here."""

    platform = FakePlatform(tmp_path / "platform", stats_interval=1.0, min_extension=30.0, start_delay=0.5)
    bindir = platform.install(tmp_path / "platform-bin")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    for name, value in platform.env.items():
        monkeypatch.setenv(name, value)
    return platform
