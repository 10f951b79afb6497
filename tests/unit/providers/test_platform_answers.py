"""What the platforms' CLIs answer, read into the app's clock: the JSON shapes of `coder list -o json`
(codersdk.Workspace, coder/coder codersdk/workspacebuilds.go) and `gh codespace view --json` (cli/cli
internal/codespaces/api/api.go), and every answer the app does not understand read as unknown, never a guess
and never an exception. The answers are written here as the sources define them (the CLIs cannot run here)."""

from __future__ import annotations

import json

import pytest
from workroom.core.platform_clock import PlatformState
from workroom.providers.bounded_cli import CliAnswer, CliProblem
from workroom.providers.coder import coder_clock, split_workspace
from workroom.providers.codespaces import codespace_clock
from workroom.providers.platform_cli import go_duration, parse_json, parse_time

pytestmark = pytest.mark.unit

NOW = 1893491100.0  # 2030-01-01T09:45:00Z: the answers below are read then


def workspace(status: str | None, **build: object) -> dict[str, object]:
    latest: dict[str, object] = {"build_number": 7, "transition": "start", "reason": "initiator",
                                 "deadline": "2030-01-01T10:00:00Z", "max_deadline": "2030-01-01T18:00:00.5Z",
                                 "job": {"status": "succeeded", "completed_at": "2030-01-01T09:00:00Z"}, **build}
    if status is not None:
        latest["status"] = status
    return {"name": "ws1", "owner_name": "alice", "last_used_at": "2030-01-01T09:30:00Z", "latest_build": latest,
            "some_field_from_a_newer_coder": {"nested": [1, 2]}}


def test_a_running_workspace_has_its_deadlines_and_run() -> None:
    clock = coder_clock([workspace("running")], "ws1", None, NOW)
    assert clock.state is PlatformState.RUNNING and clock.can_extend
    assert clock.deadline == parse_time("2030-01-01T10:00:00Z")
    assert clock.max_deadline == parse_time("2030-01-01T18:00:00.5Z")
    assert clock.last_used == parse_time("2030-01-01T09:30:00Z") and clock.build == "7"


def test_a_stopped_workspace_says_why() -> None:
    clock = coder_clock([workspace("stopped", transition="stop", reason="autostop", deadline=None)], "ws1", None, NOW)
    assert clock.state is PlatformState.STOPPED and clock.stop_reason == "it reached its deadline (autostop)"
    assert clock.stopped_at == parse_time("2030-01-01T09:00:00Z") and not clock.can_extend


@pytest.mark.parametrize(("status", "state"), [
    ("starting", PlatformState.STARTING), ("pending", PlatformState.STARTING), ("stopping", PlatformState.STOPPING),
    ("failed", PlatformState.FAILED), ("canceled", PlatformState.FAILED), ("deleted", PlatformState.DELETED),
    ("hibernating", PlatformState.UNKNOWN)])
def test_every_other_status_is_named_and_a_new_one_is_unknown(status: str, state: PlatformState) -> None:
    clock = coder_clock([workspace(status)], "ws1", None, NOW)
    assert clock.state is state and clock.deadline is None
    if state is PlatformState.UNKNOWN:
        assert clock.said == "coder says: the workspace is hibernating"


def test_an_older_cli_without_a_build_status_is_read_from_its_job() -> None:
    assert coder_clock([workspace(None)], "ws1", None, NOW).state is PlatformState.RUNNING
    stopped = workspace(None, transition="stop")
    assert coder_clock([stopped], "ws1", None, NOW).state is PlatformState.STOPPED


@pytest.mark.parametrize("data", [[], [{"name": "other"}], {"workspaces": []}, None, [workspace("running")]])
def test_a_workspace_not_listed_is_unknown(data: object) -> None:
    clock = coder_clock(data, "ws9", None, NOW)
    assert clock.state is PlatformState.UNKNOWN and "no workspace called ws9" in clock.said


def test_owner_and_agent_in_a_reference() -> None:
    assert split_workspace("alice/ws1.main") == ("alice", "ws1")
    assert split_workspace("ws1") == (None, "ws1")
    assert coder_clock([workspace("running")], "ws1", "bob", NOW).state is PlatformState.UNKNOWN


@pytest.mark.parametrize(("word", "state"), [
    ("Available", PlatformState.RUNNING), ("Shutdown", PlatformState.STOPPED), ("Starting", PlatformState.STARTING),
    ("Rebuilding", PlatformState.STARTING), ("ShuttingDown", PlatformState.STOPPING), ("Failed", PlatformState.FAILED),
    ("Deleted", PlatformState.DELETED), ("Unknown", PlatformState.UNKNOWN), ("Hovering", PlatformState.UNKNOWN)])
def test_codespace_states(word: str, state: PlatformState) -> None:
    clock = codespace_clock({"name": "cs", "state": word, "idleTimeoutMinutes": 30,
                             "lastUsedAt": "2030-01-01T09:00:00Z"}, NOW, "idle")
    assert clock.state is state and not clock.can_extend and clock.deadline is None
    assert clock.idle_timeout_seconds == 1800 and clock.build == "2030-01-01T09:00:00Z"
    assert (clock.stop_reason == "idle") is (state is PlatformState.STOPPED)


@pytest.mark.parametrize("data", [None, [], {"name": "cs"}, {"state": 3}, {"state": None}])
def test_a_codespace_answer_without_a_state_is_unknown(data: object) -> None:
    assert codespace_clock(data, 1.0).state is PlatformState.UNKNOWN


def test_a_cli_answer_that_is_not_json_or_failed_says_so() -> None:
    with pytest.raises(CliProblem, match="not JSON"):
        parse_json(CliAnswer(0, b"<html>", b""))
    with pytest.raises(CliProblem, match="not logged in"):
        parse_json(CliAnswer(1, b"", b"You are not logged in.\n"))
    assert parse_json(CliAnswer(0, b"", b"No workspaces found!")) == []
    assert parse_json(CliAnswer(0, json.dumps([1]).encode(), b"")) == [1]
    with pytest.raises(CliProblem):
        parse_json(CliAnswer(0, b"[" * 100000, b""))


@pytest.mark.parametrize(("value", "expected"), [("0001-01-01T00:00:00Z", None), (None, None), ("soon", None),
                                                  (12, None), ("1970-01-01T00:01:00Z", 60.0)])
def test_times(value: object, expected: float | None) -> None:
    assert parse_time(value) == expected


def test_durations_as_go_reads_them() -> None:
    assert go_duration(1800) == "30m" and go_duration(5400) == "1h30m" and go_duration(95) == "1m35s"
    assert go_duration(0.2) == "1s"


def odd(**build: object) -> dict[str, object]:
    return workspace("running", **build)


@pytest.mark.parametrize(("build", "words"), [
    ({"max_deadline": "0002-01-01T00:00:00Z"}, "limit (max_deadline) (0002-01-01T00:00:00Z) is not a time it can mean"),
    ({"max_deadline": "9999-12-31T23:59:59Z"}, "limit (max_deadline) (9999-12-31T23:59:59Z) is not a time"),
    ({"deadline": float("nan")}, "deadline is not a time (nan)"),
    ({"deadline": "tomorrow"}, "deadline is not a time (tomorrow)"),
    ({"deadline": 1893495600}, "deadline is not a time"),
    ({"max_deadline": "2030-01-01T09:50:00Z"}, "its limit (max_deadline) comes before its deadline"),
])
def test_a_time_the_platform_cannot_mean_is_unknown_in_its_words_and_nothing_is_extended_on_it(
        build: dict[str, object], words: str) -> None:
    """Year 2 gave "at most 0 s more" with can_extend true; year 9999 "2912105 d"; a NaN deadline "keeps no stop
    time", the platform's own "no deadline". Each is now unknown, said in the platform's words, and not extended."""
    from workroom.core.keepawake import Cannot
    from workroom.core.platform_clock import clock_words, plan_extension
    from workroom.providers.coder import CODER_RULES

    clock = coder_clock([odd(**build)], "ws1", None, NOW)
    assert clock.state is PlatformState.RUNNING and not clock.can_extend
    assert clock.odd_times is not None and words in clock.odd_times and clock.odd_times.startswith("coder says:")
    line = clock_words(clock, NOW, ceiling_seconds=3600)
    assert "not known" in line and "keeps no stop time" not in line and " 0 s more" not in line
    assert not any(f"{n} d" in line for n in range(400, 10**8, 997))
    plan = plan_extension(clock, now=NOW, kept_until=NOW + 3600, rules=CODER_RULES)
    assert isinstance(plan, Cannot) and "not known" in plan.words


def test_a_deadline_already_past_is_said_plainly_and_not_extended() -> None:
    from workroom.core.platform_clock import clock_words

    clock = coder_clock([odd(deadline="2030-01-01T09:40:00Z")], "ws1", None, NOW)
    assert clock.deadline is not None and not clock.can_extend and clock.odd_times is None
    assert clock_words(clock, NOW).startswith("stops any moment now")


def test_the_platforms_own_no_deadline_stays_no_deadline() -> None:
    from workroom.core.platform_clock import clock_words

    clock = coder_clock([odd(deadline="0001-01-01T00:00:00Z", max_deadline=None)], "ws1", None, NOW)
    assert clock.odd_times is None and clock.deadline is None and clock_words(clock, NOW) == "keeps no stop time"
