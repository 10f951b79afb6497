"""The truth harness's own arithmetic (tests/truth/harness.py): what a red run says about when it was busy."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "truth"))
import harness


def _result(samples, start=10.0):
    return harness.Result("w", "idle", "why", "", samples=samples, work_start=start)


def test_spans_join_neighbouring_busy_seconds_and_count_from_the_start_of_work():
    busy = [(float(t), True, ["cpu: node (pid 23)", "net: traffic"]) for t in range(13, 18)]
    later = [(float(t), True, ["tcp: node (pid 11)"]) for t in range(54, 57)]
    quiet = [(float(t), False, []) for t in range(18, 54)]
    r = _result([(9.0, True, ["cpu: setup"]), *busy, *quiet, *later, (57.0, False, [])])
    assert r.spans() == "3-7 s cpu: node, net: traffic; 44-46 s tcp: node"
    assert r.time_to_idle() == 47.0


def test_spans_say_never_busy_and_cut_a_long_list():
    assert _result([(float(t), False, []) for t in range(20)]).spans() == "never busy"
    flicker = [(float(t), t % 3 == 0, ["net: traffic"] if t % 3 == 0 else []) for t in range(10, 40)]
    text = _result(flicker).spans(limit=2)
    assert text.count("net: traffic") == 2 and text.endswith("; …")


def test_a_header_bound_replaces_the_suite_s_and_the_editor_s_is_its_goal():
    tm = harness.CI
    by_name = {w.name: w for w in harness.all_workloads()}
    assert by_name["http_server_idle"].settle_limit(tm) == tm.hold + 15 < tm.settle
    assert by_name["code_server_tab_idle_ssh_l"].settle_limit(tm) == 90.0 > tm.settle
    assert by_name["burner"].settle_limit(tm) == tm.settle


def test_log_tails_name_each_log_and_keep_its_end():
    r = _result([])
    assert r.log_tails() == ""
    r.logs = {"nb.log": "kernel restarted\n", "agent.log": "tick\n"}
    text = r.log_tails()
    assert text.index("--- agent.log (end) ---") < text.index("--- nb.log (end) ---")
    assert "kernel restarted" in text and "tick" in text
