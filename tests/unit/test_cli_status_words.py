"""`workroom status` says what keeps a host busy in the app's words, and a refused login in its own words with
the command line's advice: one vocabulary for both faces (core.busy_reasons, core.errors.ERROR_KINDS)."""

from __future__ import annotations

import pytest
from unit.core.status_factory import make_busy
from workroom.cli.words import snapshot_json as _snapshot_json
from workroom.cli.words import snapshot_line as _snapshot_line
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.errors import ErrorInfo, ErrorKind
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.traits import SSH_TRAITS

pytestmark = pytest.mark.unit


def test_the_status_line_uses_the_apps_words_not_raw_signals() -> None:
    status = make_busy(busy_reasons=["sleep: sleep (pid 16743)", "cpu: cc1plus (pid 9)"])
    snap = HostSnapshot(Host(name="dev", provider="ssh", address="dev.example"), SSH_TRAITS,
                        ConnectionInfo(state=ConnectionState.LIVE), status, None)
    line = _snapshot_line(snap)
    assert "waiting in a job: sleep; compiling: cc1plus" in line
    assert "pid" not in line and "sleep: sleep" not in line
    assert _snapshot_json(snap)["status"]["busy_reasons"] == ["sleep: sleep (pid 16743)", "cpu: cc1plus (pid 9)"]


def test_a_refused_login_reads_login_refused_with_the_command_lines_advice() -> None:
    error = ErrorInfo(title="Login refused", message="dev:22 did not accept user 'u'.",
                      hint="Check which key to use (--identity FILE or IdentityFile in ~/.ssh/config).",
                      kind=ErrorKind.LOGIN_REFUSED)
    snap = HostSnapshot(Host(name="dev", provider="ssh", address="dev.example"), SSH_TRAITS,
                        ConnectionInfo(state=ConnectionState.ERROR, error=error), None, None)
    assert "Login refused" in _snapshot_line(snap)
    badge = _snapshot_json(snap)["badge"]
    assert badge["label"] == "Login refused" and "--identity FILE" in badge["tooltip"]
    assert "Key file field" not in badge["tooltip"] and "cannot reach" not in badge["tooltip"]


def test_keep_on_an_asleep_box_never_suggests_waking_it_and_other_commands_say_how() -> None:
    """`workroom keep box2` with nothing to keep: an asleep box has no work of its own to keep awake, so the
    answer does not offer `--wake` (waking an idle box to keep it awake is the one thing not to do); a command
    whose point needs the box awake (connect, why) says how to wake it."""
    from workroom.cli.words import asleep_answer
    from workroom.core.last_known import LastKnown

    class Engine:
        def last_known(self, name: str) -> LastKnown:
            return LastKnown()

    keep = asleep_answer(Engine(), "box2", "keep")  # type: ignore[arg-type]
    assert "--wake" not in keep.hint and "Nothing was sent" in keep.hint
    why = asleep_answer(Engine(), "box2", "why")  # type: ignore[arg-type]
    assert why.hint == "`workroom why box2 --wake` to wake it and read its record."


def nested_brackets(text: str) -> list[int]:
    """Where a bracket opens inside another one (docs/ui.md: never a bracket in a bracket)."""
    depth, at = 0, []
    for i, c in enumerate(text):
        if c in "([":
            if depth:
                at.append(i)
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
    return at


def test_an_asleep_boxs_status_line_holds_no_bracket_in_a_bracket() -> None:
    from workroom.cli.words import status_line
    from workroom.core.last_known import LastKnown

    class Engine:
        def last_known(self, name: str) -> LastKnown:
            return LastKnown(doing="busy", reported="busy", since=100.0, seen_at=1.0, asleep_since=50.0)

    snap = HostSnapshot(Host(name="box1", provider="simbox", address="127.0.0.1"), SSH_TRAITS,
                        ConnectionInfo(state=ConnectionState.ASLEEP), None, None)
    line = status_line(Engine(), snap)  # type: ignore[arg-type]
    assert "box1 is asleep (since " in line and "last known busy (" in line and line.endswith("; not woken")
    assert nested_brackets(line) == [], line


@pytest.mark.parametrize("odd", [None, "coder says: its limit (max_deadline) (9999-12-31) is not a time it can mean"])
def test_a_platform_boxs_status_line_holds_no_bracket_in_a_bracket(odd: str | None) -> None:
    """The platform's clock ends the line after a dot, its maximum beside the ceiling with no bracket of its own, and
    a platform's words that hold brackets (an odd time) are never put inside another."""
    import time

    from workroom.core.platform_clock import PlatformClock, PlatformState
    from workroom.core.traits import CODER_TRAITS

    now = time.time()
    clock = PlatformClock(state=PlatformState.RUNNING, said="running", read_at=now, deadline=now + 720,
                          max_deadline=None if odd else now + 8 * 3600, odd_times=odd)
    snap = HostSnapshot(Host(name="ws", provider="coder"), CODER_TRAITS,
                        ConnectionInfo(state=ConnectionState.LIVE, platform=clock), make_busy(), None)
    line = _snapshot_line(snap)
    assert "· stops in 12 min" in line or "· stops in 11 min" in line, line
    assert ("its limit is not known" in line) if odd else ("; at most 8 h more by the platform's limit" in line), line
    assert nested_brackets(line) == [], line


def test_at_the_platforms_maximum_a_one_shot_status_says_not_kept_before_the_keeper_has_planned() -> None:
    """A busy Coder workspace whose deadline is its maximum, 4 min away, its ceiling hours off: the status printed
    right after connecting (the keeper has found nothing yet: `platform_not_kept` is None) says what the watch says
    a moment later: not kept awake, the platform's maximum; never "kept awake … stops in 4 min"."""
    import time

    from workroom.core.metering import NotKeptAwakeReason
    from workroom.core.platform_clock import PlatformClock, PlatformState
    from workroom.core.traits import CODER_TRAITS

    now = time.time()
    clock = PlatformClock(state=PlatformState.RUNNING, said="running", read_at=now, deadline=now + 240,
                          max_deadline=now + 240, can_extend=True)
    status = make_busy(awake_seconds=3600, ceiling_seconds=4 * 3600)
    snap = HostSnapshot(Host(name="ws", provider="coder"), CODER_TRAITS,
                        ConnectionInfo(state=ConnectionState.LIVE, platform=clock), status, None)
    line, data = _snapshot_line(snap), _snapshot_json(snap)
    assert data["badge"]["kind"] == "busy_not_kept_awake", data["badge"]
    assert "maximum" in data["badge"]["tooltip"] and "kept awake by" not in data["badge"]["tooltip"]
    assert data["platform"]["not_kept"] == NotKeptAwakeReason.PLATFORM_MAXIMUM.value
    assert "· stops in" in line
    below = clock.model_copy(update={"max_deadline": now + 8 * 3600})  # room left: kept up by extending
    kept = HostSnapshot(Host(name="ws", provider="coder"), CODER_TRAITS,
                        ConnectionInfo(state=ConnectionState.LIVE, platform=below), status, None)
    assert _snapshot_json(kept)["platform"]["not_kept"] is None
