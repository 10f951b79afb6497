"""macOS-only code paths run on Linux with the Objective-C bridge faked (the only fake: there is no Cocoa
here). They show which messages are sent and when; only a Mac shows that Cocoa acts on them
(docs/macos.md)."""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
import stat
from pathlib import Path

import pytest
from fixtures.fifo import within
from workroom.platform import logs, macos

pytestmark = pytest.mark.unit


class FakeBridge:
    """Records (receiver, selector, args); classes are named ints, objects count up from 1000. Refuses a message
    whose prototype is not declared (macos.SIGNATURES), as the real bridge does."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, str, tuple[object, ...]]] = []
        self.next_id = 1000

    def cls(self, name: str) -> int:
        return hash(name) & 0xFFFF

    def string(self, text: str) -> int:
        self.calls.append(("NSString", "stringWithUTF8String:", (text,)))
        return 7

    def msg(self, receiver: int, selector: str, *args: object) -> int:
        macos.signature(selector, args)  # a message with no declared prototype would crash on a Mac
        self.calls.append((receiver, selector, args))
        self.next_id += 1
        return self.next_id


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeBridge:
    bridge = FakeBridge()
    monkeypatch.setattr(macos, "_bridge", bridge)
    return bridge


def selectors(fake: FakeBridge) -> list[str]:
    return [c[1] for c in fake.calls]


def test_bring_to_front_activates_the_shared_application(fake: FakeBridge) -> None:
    macos.bring_to_front()
    assert selectors(fake) == ["sharedApplication", "activateIgnoringOtherApps:"]
    assert fake.calls[-1][2] == (1,)


def test_dock_icon_hidden_with_the_accessory_policy(fake: FakeBridge) -> None:
    macos.hide_dock_icon()
    assert fake.calls[-1][1:] == ("setActivationPolicy:", (macos.ACTIVATION_POLICY_ACCESSORY,))


def test_app_nap_activity_is_held_while_anything_is_pending_and_ended_after(fake: FakeBridge) -> None:
    guard = macos.AppNapGuard()
    guard.hold("box-a")
    begun = [c for c in fake.calls if c[1] == "beginActivityWithOptions:reason:"]
    assert len(begun) == 1 and begun[0][2][0] == macos.ACTIVITY_OPTIONS
    assert not macos.ACTIVITY_OPTIONS & (1 << 20), "the Mac itself may still sleep"
    guard.hold("box-b")
    guard.release("box-a")
    assert selectors(fake).count("beginActivityWithOptions:reason:") == 1
    assert "endActivity:" not in selectors(fake)
    guard.release("box-b")
    assert selectors(fake).count("endActivity:") == 1 and guard.token is None
    guard.release("box-b")
    assert selectors(fake).count("endActivity:") == 1


def test_everything_is_a_no_op_without_cocoa(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(macos, "_bridge", None)
    monkeypatch.setattr(macos.sys, "platform", "linux")
    macos.bring_to_front()
    macos.hide_dock_icon()
    guard = macos.AppNapGuard()
    guard.hold("x")
    assert guard.token is None


def test_log_folder_on_macos_is_library_logs_workroom(tmp_path: Path) -> None:
    assert logs.app_log_dir(tmp_path, workroom_home_set=False, system="Darwin") == \
        Path("~/Library/Logs/Workroom").expanduser()
    assert logs.app_log_dir(tmp_path, workroom_home_set=True, system="Darwin") == tmp_path
    assert logs.app_log_dir(tmp_path, workroom_home_set=False, system="Linux") == tmp_path


def test_secrets_never_reach_the_log_file(tmp_path: Path) -> None:
    path = logs.setup_logging(tmp_path / "logs")
    try:
        logging.getLogger("workroom.test").info("unlock with passphrase=%s for %s", "hunter2", "box")
        logging.getLogger("workroom.test").info("api_key: sk-123 token=abc")
    finally:
        root = logging.getLogger()
        for handler in [h for h in root.handlers if getattr(h, "workroom_log", False)]:
            root.removeHandler(handler)
            handler.close()
    text = path.read_text()
    assert "hunter2" not in text and "sk-123" not in text and "abc" not in text
    assert "passphrase=[redacted] for box" in text
    assert (path.stat().st_mode & 0o777) == 0o600 and (path.parent.stat().st_mode & 0o777) == 0o700


def test_a_fifo_in_place_of_the_log_file_is_moved_aside_instead_of_hanging_the_start(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir(mode=0o700)
    fifo = folder / logs.LOG_FILE_NAME
    os.mkfifo(fifo, 0o600)
    try:
        path = within(lambda: logs.setup_logging(folder), [fifo])
    finally:
        root = logging.getLogger()
        for handler in [h for h in root.handlers if getattr(h, "workroom_log", False)]:
            root.removeHandler(handler)
            handler.close()
    assert path == fifo and stat.S_ISREG(path.stat().st_mode)
    aside = [p for p in folder.iterdir() if p.name.startswith(f"{logs.LOG_FILE_NAME}.corrupt-")]
    assert len(aside) == 1 and stat.S_ISFIFO(aside[0].lstat().st_mode)
    assert "was a FIFO, not a file" in path.read_text() and aside[0].name in path.read_text()


def test_prompt_balloons_do_not_time_out_on_macos() -> None:
    """Qt's balloon, the fallback where no notification service answers (an app run outside a bundle)."""
    pytest.importorskip("PySide6")
    from workroom.ui.notification_delivery import balloon_timeout_ms

    assert balloon_timeout_ms(True, "darwin") == 0
    assert balloon_timeout_ms(False, "darwin") == 15000
    assert balloon_timeout_ms(True, "linux") == 15000


def _rubicon_runtime() -> ast.Module:
    spec = importlib.util.find_spec("rubicon")  # the namespace package: nothing of it runs here
    assert spec is not None and spec.submodule_search_locations, "rubicon-objc is not installed (./dev setup)"
    path = Path(next(iter(spec.submodule_search_locations))) / "objc" / "runtime.py"
    return ast.parse(path.read_text(encoding="utf-8"))


def test_the_bridge_uses_rubicons_runtime_as_the_installed_rubicon_defines_it() -> None:
    """rubicon-objc cannot run off macOS, but its source is here (a dev dependency on every platform): the bridge's
    calls are held to it, so a renamed function or keyword fails here rather than on a Mac. `send_message` takes the
    prototype as keywords (`restype`, `argtypes`); `get_class` and `load_library` take a name; `Class` and `SEL` are
    `objc_id`-like types the runtime accepts as receiver and selector."""
    tree = _rubicon_runtime()
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    send = functions["send_message"]
    assert [a.arg for a in send.args.args[:2]] == ["receiver", "selector"] and send.args.vararg is not None
    assert {"restype", "argtypes"} <= {a.arg for a in send.args.kwonlyargs}
    assert [a.arg for a in functions["get_class"].args.args] == ["name"]
    assert [a.arg for a in functions["load_library"].args.args] == ["name"]
    assert {"objc_id", "Class", "SEL"} <= set(classes)
    assert [b.id for b in classes["Class"].bases if isinstance(b, ast.Name)] == ["objc_id"]


def test_every_message_has_a_prototype_in_the_types_the_bridge_knows() -> None:
    for selector, (restype, argtypes) in macos.SIGNATURES.items():
        assert selector.count(":") == len(argtypes), selector
        assert restype is None or restype in macos.C_TYPES, selector
        assert set(argtypes) <= set(macos.C_TYPES), selector


def test_a_message_without_a_declared_prototype_is_refused_before_it_is_sent(fake: FakeBridge) -> None:
    with pytest.raises(KeyError, match="no declared signature"):
        fake.msg(1, "terminate:", 0)
    with pytest.raises(TypeError, match="takes 1 argument"):
        fake.msg(1, "setActivationPolicy:")
    assert fake.calls == []
