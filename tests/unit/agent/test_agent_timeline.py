"""The why-awake record: coalescing, the byte budget and 7-day limit, a corrupt file, restarts, the tick hook."""

import itertools
import json
import os
import stat

import pytest
from agentfake import make_agent
from fixtures.fifo import within
from wr_agent import exclusions
from wr_agent import reasons as R
from wr_agent import timeline as tl
from wr_agent.settings import Settings, SettingsError
from wr_agent.user_exclusions import UserExclusions

pytestmark = pytest.mark.unit

CC1 = (tl.BUSY, "cpu", "cc1")
IDLE = (tl.IDLE, "", "")


class Wall:
    def __init__(self, t=1_700_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def run(t, wall, key, seconds):
    for _ in range(int(seconds)):
        wall.t += 1
        t.note(key)


def test_reason_classes_and_keys():
    cc1 = R.make(R.CPU, "cc1", "5")
    assert R.timeline_key(cc1) == ("cpu", "cc1")
    assert R.timeline_key(R.make(R.CPU, "my prog", "5", coarse=True)) == ("cpu", "my prog")
    assert R.timeline_key(R.make(R.TCP, "ssh", "9", peer="10.0.0.5")) == ("tcp", "ssh")
    assert R.timeline_key(R.make(R.KEYSTROKE)) == ("keystroke", "")
    assert R.timeline_key(R.make(R.FIFO, "cat", "8")) == ("fifo", "cat")
    assert R.timeline_key(R.make(R.MORE, count=3)) == ("other", "")
    assert tl.key_for(True, True, False, False, [cc1]) == CC1
    assert tl.key_for(True, False, False, False, [R.make(R.HOLD, after=cc1)]) == (tl.HELD, "cpu", "cc1")
    assert tl.key_for(True, True, True, False, [cc1]) == (tl.CEILING, "cpu", "cc1")
    assert tl.key_for(False, True, True, True, [R.make(R.SLEEP, "sh", "7")]) == (tl.CEILING, "sleep", "sh")
    assert tl.key_for(True, True, False, False, [R.make(R.RESUME)]) == (tl.HELD, "other", "")
    assert tl.key_for(False, False, False, False, []) == IDLE


def test_every_class_the_record_can_hold_comes_from_the_reason_table():
    assert set(R.TIMELINE_CLASSES) == {row.timeline for row in R.ROWS if row.timeline}
    assert set(R.TIMELINE_CLASSES) >= {"cpu", "disk", "sleep", "fifo", "tcp", "tty_output", "keystroke", "net",
                                       "operation", "other"}


def test_a_steady_hour_is_one_span_and_a_change_starts_another():
    wall = Wall()
    t = tl.Timeline(clock=wall)
    t.note(CC1)
    run(t, wall, CC1, 3600)
    run(t, wall, IDLE, 600)
    spans = t.query()["spans"]
    assert [(s["state"], s["subject"]) for s in spans] == [("busy", "cc1"), ("idle", "")]
    assert spans[0]["end"] - spans[0]["start"] == pytest.approx(3600, abs=61)
    assert spans[1]["end"] - spans[1]["start"] == pytest.approx(600, abs=61)
    assert spans[1]["end"] == pytest.approx(wall.t, abs=1)


def test_flapping_within_a_minute_costs_at_most_a_few_spans_per_minute():
    wall = Wall()
    t = tl.Timeline(clock=wall)
    t.note(IDLE)
    for i in range(3600):
        wall.t += 1
        t.note(CC1 if i % 2 else (tl.BUSY, "sleep", "sh"))
    spans = t.query()["spans"]
    assert len(spans) <= 2 * 61
    total = {}
    for s in spans:
        total[s["class"]] = total.get(s["class"], 0) + s["end"] - s["start"]
    assert total["cpu"] == pytest.approx(1800, abs=60) and total["sleep"] == pytest.approx(1800, abs=60)


def test_a_gap_in_ticks_is_recorded_as_asleep():
    wall = Wall()
    t = tl.Timeline(clock=wall)
    t.note(CC1)
    run(t, wall, CC1, 100)
    wall.t += 900
    t.note(IDLE)
    run(t, wall, IDLE, 100)
    states = [(s["state"], round(s["end"] - s["start"])) for s in t.query()["spans"]]
    assert states[1] == ("asleep", 900)
    assert [s for s, _ in states] == ["busy", "asleep", "idle"]


def test_budget_drops_the_oldest_first_and_days_expire():
    wall = Wall()
    t = tl.Timeline(clock=wall, budget_bytes=4000)
    t.note(IDLE)
    for i in range(400):  # 400 alternating 5-minute spans: far more than 4000 bytes
        run(t, wall, CC1 if i % 2 else IDLE, 300)
    assert t._bytes <= 4000
    assert len(t.spans) < 200
    assert t.spans[-1][1] == pytest.approx(wall.t - 60, abs=61)  # the newest are kept
    t2 = tl.Timeline(clock=wall, keep_seconds=3600)
    t2.note(IDLE)
    for i in range(100):
        run(t2, wall, CC1 if i % 2 else IDLE, 300)
    assert t2.spans[0][1] >= wall.t - 3600 - 300


def test_reply_is_paged_under_the_line_limit():
    wall = Wall()
    t = tl.Timeline(clock=wall)
    t.note(IDLE)
    for i in range(2000):
        run(t, wall, CC1 if i % 2 else IDLE, 61)
    first = t.query(limit_bytes=10000)
    assert len(json.dumps(first)) < 12000 and first["more_since"] is not None
    second = t.query(since=first["more_since"], limit_bytes=10000)
    assert second["spans"][0]["start"] >= first["spans"][-1]["start"]


def test_restart_keeps_the_record_and_a_handoff_second_is_no_gap(tmp_path):
    path = str(tmp_path / "agent.timeline")
    wall = Wall()
    t = tl.Timeline(path, clock=wall)
    t.note(CC1)
    run(t, wall, CC1, 300)
    t.stop()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    wall.t += 1  # a hand-off: the new process ticks a second later
    t2 = tl.Timeline(path, clock=wall)
    t2.note(CC1)
    run(t2, wall, CC1, 300)
    spans = t2.query()["spans"]
    assert len(spans) == 1 and spans[0]["end"] - spans[0]["start"] == pytest.approx(601, abs=2)
    assert t2.problem is None


def test_after_a_restart_the_agents_absence_is_not_called_asleep(tmp_path):
    path = str(tmp_path / "agent.timeline")
    wall = Wall()
    t = tl.Timeline(path, clock=wall)
    t.note(CC1)
    run(t, wall, CC1, 120)
    t.stop()
    wall.t += 3600
    t2 = tl.Timeline(path, clock=wall)
    t2.note(IDLE)
    run(t2, wall, IDLE, 120)
    assert [s["state"] for s in t2.query()["spans"]] == ["busy", "idle"]


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 1, "spans": [[1, 0, "busy", "", ""]]}',
                                     b'{"format": 99, "spans": []}', b"\xff\xfe", b'[1, 2]',
                                     b'{"format": 1, "spans": [[1, 2, "dancing", "", ""]]}'])
def test_a_corrupt_file_is_kept_aside_and_reported(tmp_path, content):
    path = tmp_path / "agent.timeline"
    path.write_bytes(content)
    wall = Wall()
    t = tl.Timeline(str(path), clock=wall)
    assert (tmp_path / "agent.timeline.corrupt").read_bytes() == content
    reply = t.query()
    assert "unreadable" in reply["problem"] and "agent.timeline.corrupt" in reply["problem"]
    t.note(CC1)
    run(t, wall, CC1, 10)
    assert t.save()
    assert tl.Timeline(str(path), clock=wall).problem is None  # the new record is readable


def test_a_fifo_as_the_record_is_set_aside_like_a_corrupt_file(tmp_path):
    path = tmp_path / "agent.timeline"
    os.mkfifo(str(path))
    t = within(lambda: tl.Timeline(str(path), clock=Wall()), [path])
    assert "unreadable (not a regular file)" in t.problem and "agent.timeline.corrupt" in t.problem
    assert stat.S_ISFIFO(os.lstat(str(tmp_path / "agent.timeline.corrupt")).st_mode)
    assert not os.path.lexists(str(path))


def test_a_fifo_as_the_exclusions_file_is_reported_like_a_corrupt_file(tmp_path):
    path = tmp_path / "agent.exclusions"
    os.mkfifo(str(path))
    try:
        ex = within(lambda: UserExclusions(str(path)), [path])
        assert "unreadable (not a regular file)" in ex.problem and ex.names == []
        assert stat.S_ISFIFO(os.lstat(str(path)).st_mode)  # left alone, like a corrupt file
        assert ex.set(["watch"]) == ["watch"] and ex.problem is None
        assert UserExclusions(str(path)).names == ["watch"]  # setting the list again replaced it
    finally:
        exclusions.set_user_names([])


def test_save_failure_is_logged_not_raised(tmp_path):
    t = tl.Timeline(str(tmp_path / "missing-dir" / "agent.timeline"), clock=Wall())
    t.note(CC1)
    assert t.save() is False


def test_the_tick_feeds_the_record_and_never_writes(tmp_path):
    agent, sampler, clock = make_agent(Settings(3600, 600, False))
    wall = Wall()
    agent.timeline = tl.Timeline(str(tmp_path / "t"), clock=wall)
    sampler.sig.cpu = [("cc1", "42", 0.9)]
    for _ in range(5):
        clock.t += 1
        wall.t += 1
        agent.tick()
    sampler.sig.cpu = []
    for _ in range(40):
        clock.t += 1
        wall.t += 1
        agent.tick()
    states = [(s["state"], s["class"], s["subject"]) for s in agent.timeline.query()["spans"]]
    assert states[0] == ("busy", "cpu", "cc1")
    assert ("held", "cpu", "cc1") in states and states[-1] == ("idle", "", "")
    assert not os.path.exists(str(tmp_path / "t"))  # written by the writer thread or at stop, not by the tick


def test_user_exclusions_validate_persist_and_apply(tmp_path):
    path = str(tmp_path / "agent.exclusions")
    ex = UserExclusions(path)
    try:
        assert ex.set(["watch", " top ", "watch"]) == ["top", "watch"]
        assert "watch" in exclusions.TREES and "cron" in exclusions.TREES
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert UserExclusions(path).names == ["top", "watch"]
        for bad in ("watch", [""], ["a/b"], [3], ["x" * 65], [f"n{i}" for i in range(65)]):
            with pytest.raises(SettingsError):
                ex.set(bad)
        assert ex.names == ["top", "watch"]
        (tmp_path / "agent.exclusions").write_text("{oops")
        assert "unreadable" in UserExclusions(path).problem
    finally:
        exclusions.set_user_names([])
    assert "watch" not in exclusions.TREES


def test_commands_match_the_command_line_with_or_without_the_programs_path(tmp_path):
    ex = UserExclusions(str(tmp_path / "agent.exclusions"))
    try:
        names = ex.set(["python3  watcher.py", "python3 /srv/app/poll.py --every 1", "watch"])
        assert names == ["python3 /srv/app/poll.py --every 1", "python3 watcher.py", "watch"]
        assert "watch" in exclusions.TREES and "python3" not in exclusions.TREES
        assert exclusions.command_excluded(["/usr/bin/python3", "watcher.py"])
        assert exclusions.command_excluded(["python3", "watcher.py", "--poll", "1"])
        assert exclusions.command_excluded(["python3", "/srv/app/poll.py", "--every", "1"])
        assert not exclusions.command_excluded(["python3", "watcher.pyc"])
        assert not exclusions.command_excluded(["python3", "train.py"])
        assert not exclusions.command_excluded([])
        with pytest.raises(SettingsError):
            ex.set(["python3 " + "x" * 200])
    finally:
        exclusions.set_user_names([])
    assert not exclusions.command_excluded(["python3", "watcher.py"])


def test_a_backward_clock_step_keeps_the_record_ordered_and_loadable(tmp_path):
    path = str(tmp_path / "agent.timeline")
    wall = Wall()
    t = tl.Timeline(path, clock=wall)
    t.note(CC1)
    run(t, wall, CC1, 600)
    run(t, wall, IDLE, 300)
    before = [(s["start"], s["end"], s["state"], s["class"], s["subject"])
              for s in t.query()["spans"]]  # the open minute included
    wall.t -= 120  # an NTP step (or a VM restore) puts the wall clock two minutes back
    t.note(IDLE)
    run(t, wall, (tl.BUSY, "sleep", "sh"), 45)  # not yet back at the newest recorded time: in the open minute
    spans = t.query()["spans"]
    assert all(a["end"] <= b["start"] for a, b in itertools.pairwise(spans))
    run(t, wall, (tl.BUSY, "sleep", "sh"), 600)
    assert t.save()
    t2 = tl.Timeline(path, clock=wall)
    assert t2.problem is None and not os.path.exists(path + ".corrupt")
    spans = t2.spans
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert spans[:len(before)] == before  # the earlier history is kept as it was
    tail = [s for s in spans if s[2:] == (tl.BUSY, "sleep", "sh")]
    assert tail and tail[0][0] >= before[-1][1]  # nothing added before the newest recorded time
    assert tail[-1][1] == pytest.approx(wall.t, abs=61)


def test_a_record_saved_out_of_order_by_an_older_agent_loads_without_the_overlap(tmp_path):
    path = tmp_path / "agent.timeline"
    path.write_text(json.dumps({"format": 1, "last_note": 1300.0, "spans": [
        [1000.0, 1100.0, "busy", "cpu", "cc1"], [1100.0, 1200.0, "idle", "", ""],
        [1080.0, 1150.0, "busy", "sleep", "sh"], [1150.0, 1300.0, "busy", "sleep", "sh"]]}))
    t = tl.Timeline(str(path), clock=Wall(1400.0))
    assert t.problem is None and not os.path.exists(str(path) + ".corrupt")
    assert t.spans == [(1000.0, 1100.0, "busy", "cpu", "cc1"), (1100.0, 1200.0, "idle", "", ""),
                       (1200.0, 1300.0, "busy", "sleep", "sh")]
