"""Every answer a host gives the installer's probe and uninstall, of any shape: read through the installer's own
parsing (remote/host_answers.py) from a shell that answers as the host would, it becomes either the typed answer
with every field of its kind and its text plain, or an `AgentInstallError` in plain words; never another
exception (`[1,2,3]`, `{"stopped":5}`, `Infinity` and `0` once ended in tracebacks)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fuzz.test_fuzz_host_text import AnsweringShell
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from workroom.agent_bundle import AgentBundle
from workroom.remote.agent_install import AgentInstaller, AgentInstallError, AgentLayout, Probe, ServeOptions
from workroom.remote.host_answers import PROBE_FIELDS, UNINSTALL_FIELDS, UninstallReport
from wr_agent import bundle as agent_bundle

pytestmark = pytest.mark.unit

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
BUNDLE = AgentBundle(agent_bundle.bundle_bytes(), "0" * 64, "0.1.0")
words = (st.lists(st.sampled_from([*"ab -:/.\x1b\x07\x00\r\t\x9b\u202e", "\x1b]0;T\x07", "\x1b]52;c;eA==\x07",
                                   "\x1b[2J", "\x1b[8m"]), max_size=60).map("".join) | st.text(max_size=30))
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | words,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(words, inner, max_size=4), max_leaves=12)
raw_lines = st.sampled_from(["Infinity", "-Infinity", "NaN", "0", "[1,2,3]", "null", "true", '"x"', "{", ""])


def clean(*texts: object) -> bool:
    return all(not CONTROL.search(str(t)) for t in texts if t is not None)


def installer(out: str) -> AgentInstaller:
    return AgentInstaller(AnsweringShell(out.encode("utf-8", "surrogatepass"), b"", 0), BUNDLE, AgentLayout(),
                          ServeOptions(workroom="w"))


def a_valid_probe() -> dict[str, Any]:
    return {"python": "3.11.4", "home": "/h", "bundle": "/h/b.pyz", "socket": "/h/s", "sha256": None,
            "version": None, "running": False, "systemd_user": False, "launchd": False, "supervisor": None,
            "repaired": []}


@FUZZ
@given(changes=st.dictionaries(st.sampled_from([*PROBE_FIELDS, "xtra"]), json_value, max_size=5),
       drop=st.sets(st.sampled_from(list(PROBE_FIELDS)), max_size=2), raw=st.none() | raw_lines)
@example(changes={}, drop=set(), raw="Infinity")
@example(changes={}, drop=set(), raw="0")
@example(changes={"running": "yes", "repaired": [1, None]}, drop=set(), raw=None)
def test_a_probe_answer_of_any_shape_is_a_probe_or_words(changes: dict[str, Any], drop: set[str],
                                                         raw: str | None) -> None:
    doc = {k: v for k, v in {**a_valid_probe(), **changes}.items() if k not in drop}
    line = raw if raw is not None else json.dumps(doc, ensure_ascii=False)
    try:
        probe = installer(f"login chatter\n{line}\n").probe()
    except AgentInstallError as error:
        assert clean(error.title, error.message, error.hint) and len(error.message) < 2000
        return
    assert isinstance(probe, Probe)
    assert isinstance(probe.running, bool) and isinstance(probe.systemd_user, bool) and isinstance(probe.launchd, bool)
    assert isinstance(probe.running_stalled, bool) and isinstance(probe.running_frozen, bool)
    assert probe.sha256 is None or re.fullmatch("[0-9a-f]{64}", probe.sha256)
    assert all(isinstance(t, str) for t in (probe.home, probe.bundle_path, probe.socket_path, probe.python))
    assert clean(probe.python, probe.version, probe.supervisor, probe.running_build, probe.home, probe.socket_path)


@FUZZ
@given(doc=st.fixed_dictionaries({}, optional={k: json_value | st.lists(words, max_size=4) for k in
                                               [*UNINSTALL_FIELDS, "unsafe", "xtra"]}),
       raw=st.none() | raw_lines)
@example(doc={"stopped": 5}, raw=None)
@example(doc={"problems": [1, 2], "still_running": True}, raw=None)
@example(doc={"stopped": [1, None]}, raw=None)
@example(doc={}, raw="[1,2,3]")
@example(doc={"stopped": ["\x1b]0;PWNED\x07the agent"], "removed": ["\x1b[2J/x"], "problems": ["\x1b]52;c;eA==\x07"],
              "still_running": False}, raw=None)
def test_an_uninstall_answer_of_any_shape_is_a_report_or_words(doc: dict[str, Any], raw: str | None) -> None:
    line = raw if raw is not None else json.dumps(doc, ensure_ascii=False)
    try:
        report = installer(f"{line}\n").uninstall()
    except AgentInstallError as error:
        assert clean(error.title, error.message, error.hint) and len(error.message) < 2000
        return
    assert isinstance(report, UninstallReport)
    assert set(doc) >= set(UNINSTALL_FIELDS) and doc["still_running"] is False and "unsafe" not in doc
    for items in (report.stopped, report.removed, report.problems):
        assert all(isinstance(item, str) for item in items)
    assert clean(report.words(), *report.problems, *report.removed)
