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
    """Injected clocks: the wall clock (`t`, called) and the suspend-aware one (`m`, `mono`). Time passing
    moves both (`tick`); a wall-clock step moves only `t`."""

    def __init__(self, t=1_700_000_000.0):
        self.t = t
        self.m = 5000.0

    def __call__(self):
        return self.t

    def mono(self):
        return self.m

    def tick(self, seconds):
        self.t += seconds
        self.m += seconds


def run(t, wall, key, seconds):
    for _ in range(int(seconds)):
        wall.tick(1)
        t.note(key)


def test_reason_classes_and_keys():
    cc1 = R.make(R.CPU, "cc1", "5")
    assert R.timeline_key(cc1) == ("cpu", "cc1")
    assert R.timeline_key(R.make(R.CPU, "my prog", "5", coarse=True)) == ("cpu", "my prog")
    assert R.timeline_key(R.make(R.TCP, "ssh", "9", peer="10.0.0.5")) == ("tcp", "ssh")
    assert R.timeline_key(R.make(R.KEYSTROKE)) == ("keystroke", "")
    assert R.timeline_key(R.make(R.FIFO, "cat", "8")) == ("fifo", "cat")
    assert R.timeline_key(R.make(R.MORE, count=3)) == ("other", "")
    assert tl.key_for(True, True, False, False, [cc1]) == (*CC1, ())
    assert tl.key_for(True, False, False, False, [R.make(R.HOLD, after=cc1)]) == (tl.HELD, "cpu", "cc1", ())
    assert tl.key_for(True, True, True, False, [cc1]) == (tl.CEILING, "cpu", "cc1", ())
    assert tl.key_for(False, True, True, True, [R.make(R.SLEEP, "sh", "7")]) == (tl.CEILING, "sleep", "sh", ())
    assert tl.key_for(True, True, False, False, [R.make(R.RESUME)]) == (tl.HELD, "other", "", ())
    assert tl.key_for(False, False, False, False, []) == (*IDLE, ())


def _psql(since, peer="10.0.3.7", port=5432, **more):
    return R.make(R.TCP, "psql", "42", peer=peer, port=port, since=since, **more)


def test_a_network_wait_is_filed_with_its_peer_and_not_its_start_time():
    """The record keeps who the connection is to (outbound: address and port; inbound: the client's address
    and our port, not the client's port, new on each connection), never `since` (a span has its own start)."""
    key = tl.key_for(True, True, False, False, [_psql(1_700_000_000.0)])
    assert key == (tl.BUSY, "tcp", "psql", (("peer", "10.0.3.7"), ("port", 5432)))
    assert tl.key_for(True, True, False, False, [_psql(1_700_000_099.5)]) == key  # a new wait, the same key
    held = tl.key_for(True, False, False, False, [R.make(R.HOLD, after=_psql(1.0))])
    assert held == (tl.HELD, "tcp", "psql", (("peer", "10.0.3.7"), ("port", 5432)))
    served = R.make(R.TCP, "node", "7", peer="127.0.0.1", port=51234, since=5.0, local_port=8080)
    assert R.timeline_detail(served) == (("local_port", 8080), ("peer", "127.0.0.1"))
    assert R.timeline_detail(R.make(R.TCP, "ssh", "9")) == ()  # the coarse reader's reason may lack a peer


def test_spans_carry_the_peer_through_the_reply_the_file_and_a_restart(tmp_path):
    wall = Wall()
    path = str(tmp_path / "agent.sock.timeline")
    t = tl.Timeline(path, clock=wall, mono=wall.mono)
    t.note(IDLE)
    for i in range(300):  # five minutes of waits on one database, each wait with its own `since`
        wall.tick(1)
        t.note(tl.key_for(True, True, False, False, [_psql(wall.t - i % 7)]))
    run(t, wall, tl.key_for(True, True, False, False, [_psql(wall.t, peer="10.0.3.8")]), 120)
    spans = [s for s in t.query()["spans"] if s["state"] == "busy"]
    assert [(s["subject"], s.get("peer"), s.get("port")) for s in spans] == [
        ("psql", "10.0.3.7", 5432), ("psql", "10.0.3.8", 5432)]
    assert spans[0]["end"] - spans[0]["start"] == pytest.approx(300, abs=61)
    assert "since" not in spans[0] and "local_port" not in spans[0]
    t.stop()
    with open(path) as f:
        saved = json.load(f)["spans"]
    assert [s[5] for s in saved if s[2] == "busy"] == [{"peer": "10.0.3.7", "port": 5432},
                                                        {"peer": "10.0.3.8", "port": 5432}]
    assert all(len(s) == 5 for s in saved if s[2] != "busy")  # no detail: the older form
    again = tl.Timeline(path, clock=wall, mono=wall.mono)
    assert again.query()["spans"] == t.query()["spans"]


def test_an_older_agents_record_without_peers_still_loads(tmp_path):
    path = tmp_path / "agent.sock.timeline"
    start = 1_700_000_000.0
    path.write_text(json.dumps({"format": 1, "last_note": start + 120, "spans": [
        [start, start + 60, "busy", "tcp", "psql"], [start + 60, start + 120, "idle", "", ""]]}))
    wall = Wall(start + 121)
    t = tl.Timeline(str(path), clock=wall, mono=wall.mono)
    assert t.problem is None
    assert [(s["class"], s["subject"], s.get("peer")) for s in t.query()["spans"]] == [("tcp", "psql", None),
                                                                                      ("", "", None)]


@pytest.mark.parametrize("detail", [{"peer": 5}, {"port": 70000}, {"since": 1.0}, {}, ["peer"], {"port": True}])
def test_a_span_detail_no_agent_writes_sets_the_record_aside(tmp_path, detail):
    path = tmp_path / "agent.sock.timeline"
    path.write_text(json.dumps({"format": 1, "last_note": None, "spans": [[1.0, 2.0, "busy", "tcp", "x", detail]]}))
    t = tl.Timeline(str(path), clock=Wall(), mono=Wall().mono)
    assert t.problem and "bad span" in t.problem and (tmp_path / "agent.sock.timeline.corrupt").exists()


def test_every_class_the_record_can_hold_comes_from_the_reason_table():
    assert set(R.TIMELINE_CLASSES) == {row.timeline for row in R.ROWS if row.timeline}
    assert set(R.TIMELINE_CLASSES) >= {"cpu", "disk", "sleep", "fifo", "tcp", "tty_output", "keystroke", "net",
                                       "operation", "other"}


def test_a_steady_hour_is_one_span_and_a_change_starts_another():
    wall = Wall()
    t = tl.Timeline(clock=wall, mono=wall.mono)
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
    t = tl.Timeline(clock=wall, mono=wall.mono)
    t.note(IDLE)
    for i in range(3600):
        wall.tick(1)
        t.note(CC1 if i % 2 else (tl.BUSY, "sleep", "sh"))
    spans = t.query()["spans"]
    assert len(spans) <= 2 * 61
    total = {}
    for s in spans:
        total[s["class"]] = total.get(s["class"], 0) + s["end"] - s["start"]
    assert total["cpu"] == pytest.approx(1800, abs=60) and total["sleep"] == pytest.approx(1800, abs=60)


def test_a_gap_in_ticks_is_recorded_as_asleep():
    wall = Wall()
    t = tl.Timeline(clock=wall, mono=wall.mono)
    t.note(CC1)
    run(t, wall, CC1, 100)
    wall.tick(900)
    t.note(IDLE)
    run(t, wall, IDLE, 100)
    states = [(s["state"], round(s["end"] - s["start"])) for s in t.query()["spans"]]
    assert states[1] == ("asleep", 900)
    assert [s for s, _ in states] == ["busy", "asleep", "idle"]


def test_budget_drops_the_oldest_first_and_days_expire():
    wall = Wall()
    t = tl.Timeline(mono=wall.mono, clock=wall, budget_bytes=4000)
    t.note(IDLE)
    for i in range(400):  # 400 alternating 5-minute spans: far more than 4000 bytes
        run(t, wall, CC1 if i % 2 else IDLE, 300)
    assert t._bytes <= 4000
    assert len(t.spans) < 200
    assert t.spans[-1][1] == pytest.approx(wall.t - 60, abs=61)  # the newest are kept
    t2 = tl.Timeline(mono=wall.mono, clock=wall, keep_seconds=3600)
    t2.note(IDLE)
    for i in range(100):
        run(t2, wall, CC1 if i % 2 else IDLE, 300)
    assert t2.spans[0][1] >= wall.t - 3600 - 300


def test_reply_is_paged_under_the_line_limit():
    wall = Wall()
    t = tl.Timeline(clock=wall, mono=wall.mono)
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
    t = tl.Timeline(path, clock=wall, mono=wall.mono)
    t.note(CC1)
    run(t, wall, CC1, 300)
    t.stop()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    wall.tick(1)  # a hand-off: the new process ticks a second later
    t2 = tl.Timeline(path, clock=wall, mono=wall.mono)
    t2.note(CC1)
    run(t2, wall, CC1, 300)
    spans = t2.query()["spans"]
    assert len(spans) == 1 and spans[0]["end"] - spans[0]["start"] == pytest.approx(601, abs=2)
    assert t2.problem is None


def test_after_a_restart_the_agents_absence_is_not_called_asleep(tmp_path):
    path = str(tmp_path / "agent.timeline")
    wall = Wall()
    t = tl.Timeline(path, clock=wall, mono=wall.mono)
    t.note(CC1)
    run(t, wall, CC1, 120)
    t.stop()
    wall.tick(3600)
    t2 = tl.Timeline(path, clock=wall, mono=wall.mono)
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
    t = tl.Timeline(str(path), clock=wall, mono=wall.mono)
    assert (tmp_path / "agent.timeline.corrupt").read_bytes() == content
    reply = t.query()
    assert "unreadable" in reply["problem"] and "agent.timeline.corrupt" in reply["problem"]
    t.note(CC1)
    run(t, wall, CC1, 10)
    assert t.save()
    assert tl.Timeline(str(path), clock=wall, mono=wall.mono).problem is None  # the new record is readable


def test_a_fifo_as_the_record_is_set_aside_like_a_corrupt_file(tmp_path):
    path = tmp_path / "agent.timeline"
    os.mkfifo(str(path))
    t = within(lambda: tl.Timeline(str(path), clock=Wall(), mono=Wall().mono), [path])
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
    t = tl.Timeline(str(tmp_path / "missing-dir" / "agent.timeline"), clock=Wall(), mono=Wall().mono)
    t.note(CC1)
    assert t.save() is False


def test_the_tick_feeds_the_record_and_never_writes(tmp_path):
    agent, sampler, clock = make_agent(Settings(3600, 600, False))
    wall = Wall()
    agent.timeline = tl.Timeline(str(tmp_path / "t"), clock=wall, mono=wall.mono)
    sampler.sig.cpu = [("cc1", "42", 0.9)]
    for _ in range(5):
        clock.t += 1
        wall.tick(1)
        agent.tick()
    sampler.sig.cpu = []
    for _ in range(40):
        clock.t += 1
        wall.tick(1)
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


def test_exclusions_change_by_what_is_added_and_removed_in_the_list_held_then(tmp_path):
    """Two clients that each read the list and then change it (the window and `workroom exclusions`): by adding
    and removing, both changes land; replacing the list with each one's copy lost the first one's."""
    path = str(tmp_path / "agent.exclusions")
    ex = UserExclusions(path)
    try:
        ex.set(["watch"])
        seen_by_one, seen_by_two = list(ex.names), list(ex.names)
        assert seen_by_one == seen_by_two == ["watch"]
        assert ex.change(["top"], []) == ["top", "watch"]
        assert ex.change(["htop"], ["watch", "not-there"]) == ["htop", "top"]
        assert UserExclusions(path).names == ["htop", "top"]
        for bad in (([""], []), ([], ["a/b"]), (["x" * 65], [])):
            with pytest.raises(SettingsError):
                ex.change(*bad)
        assert ex.names == ["htop", "top"]
    finally:
        exclusions.set_user_names([])


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
    """The wall clock put two minutes back (an NTP step, a VM restore): what the record held after the new
    now never happened and is dropped; the rest is kept as it was and recording goes on from now."""
    path = str(tmp_path / "agent.timeline")
    wall = Wall()
    t = tl.Timeline(path, clock=wall, mono=wall.mono)
    t.note(CC1)
    run(t, wall, CC1, 600)
    run(t, wall, IDLE, 300)
    before = [(s["start"], s["end"], s["state"], s["class"], s["subject"])
              for s in t.query()["spans"]]  # the open minute included
    wall.t -= 120
    stepped_to = wall.t
    t.note(IDLE)
    run(t, wall, (tl.BUSY, "sleep", "sh"), 45)
    spans = t.query()["spans"]
    assert all(a["end"] <= b["start"] for a, b in itertools.pairwise(spans))
    run(t, wall, (tl.BUSY, "sleep", "sh"), 600)
    assert t.save()
    t2 = tl.Timeline(path, clock=wall, mono=wall.mono)
    assert t2.problem is None and not os.path.exists(path + ".corrupt")
    spans = [s[:5] for s in t2.spans]  # (the sixth item, a connection's peer: none here)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    kept = [s for s in spans if s[0] < stepped_to]
    assert kept[:-1] == before[:len(kept) - 1] and kept[-1][:1] == before[len(kept) - 1][:1]
    assert all(s[1] <= stepped_to + 61 for s in kept)  # nothing of the old record after the new now
    tail = [s for s in spans if s[2:] == (tl.BUSY, "sleep", "sh")]
    assert tail and tail[0][0] >= stepped_to - 1 and tail[0][0] <= stepped_to + 61  # recorded from now on
    assert tail[-1][1] == pytest.approx(wall.t, abs=61)


def week_of_history(t, wall, days=2):
    """`days` of alternating half-hours, a tick every 20 s (a clock step to a year ahead would expire any of
    it: the record keeps 7 days)."""
    t.note(IDLE)
    for i in range(days * 24 * 2):
        for _ in range(90):
            wall.tick(20)
            t.note(CC1 if i % 2 else IDLE)


def test_a_clock_set_a_year_ahead_for_20_s_leaves_the_week_and_the_future_empty():
    """Measured on the suspend-aware clock, the step is seen as a step: no "asleep" span to the future
    date, nothing of the week expired, and recording goes on at once after the correction."""
    wall = Wall()
    t = tl.Timeline(clock=wall, mono=wall.mono)
    week_of_history(t, wall)
    before = [s[:5] for s in t.spans]  # (no connection's peer here)
    assert len(before) >= 2 * 24 * 2 - 2 and before[0][0] <= wall.t - 2 * 24 * 3600 + 60
    wall.t += 365 * 24 * 3600.0  # set a year ahead ...
    run(t, wall, CC1, 20)
    wall.t -= 365 * 24 * 3600.0  # ... and corrected
    now = wall.t
    run(t, wall, IDLE, 600)
    spans = t.query()["spans"]
    assert all(s["state"] != "asleep" for s in spans)
    assert all(s["end"] <= wall.t + 1 for s in spans)  # nothing after now
    assert [tuple(s.values()) for s in spans][:len(before) - 1] == before[:-1]  # the week is all there
    assert spans[-1]["state"] == "idle" and spans[-1]["end"] == pytest.approx(wall.t, abs=1)
    assert spans[-1]["end"] - spans[-1]["start"] >= 600 - 61 and spans[-1]["start"] <= now + 61


def test_spans_after_now_are_dropped_on_load(tmp_path):
    """A record saved while the clock was a year ahead (and the agent restarted after the correction)
    loads without the future: the week before is kept and the next tick records again."""
    path = str(tmp_path / "agent.timeline")
    wall = Wall()
    t = tl.Timeline(path, clock=wall, mono=wall.mono)
    week_of_history(t, wall)
    before = list(t.spans)
    wall.t += 365 * 24 * 3600.0
    run(t, wall, CC1, 90)
    assert t.save()
    wall.t -= 365 * 24 * 3600.0
    wall.tick(5)
    t2 = tl.Timeline(path, clock=wall, mono=wall.mono)
    assert t2.problem is None
    assert all(s[1] <= wall.t for s in t2.spans)
    assert t2.spans[:len(before) - 1] == before[:-1]
    t2.note(IDLE)
    run(t2, wall, IDLE, 120)
    assert t2.query()["spans"][-1]["end"] == pytest.approx(wall.t, abs=1)


def test_a_suspend_is_asleep_on_the_suspend_aware_clock_even_with_a_step_at_resume():
    wall = Wall()
    t = tl.Timeline(clock=wall, mono=wall.mono)
    t.note(CC1)
    run(t, wall, CC1, 100)
    wall.tick(900)  # suspended 15 minutes: both clocks moved
    wall.t -= 30  # and NTP corrected the wall clock at resume
    t.note(IDLE)
    run(t, wall, IDLE, 100)
    states = [(s["state"], round(s["end"] - s["start"])) for s in t.query()["spans"]]
    assert [s for s, _ in states] == ["busy", "asleep", "idle"] and states[1][1] == 870


def test_the_record_is_measured_on_the_suspend_aware_clock():
    from wr_agent import clocks

    assert tl.Timeline().mono is clocks.suspend_aware


def test_a_record_saved_out_of_order_by_an_older_agent_loads_without_the_overlap(tmp_path):
    path = tmp_path / "agent.timeline"
    path.write_text(json.dumps({"format": 1, "last_note": 1300.0, "spans": [
        [1000.0, 1100.0, "busy", "cpu", "cc1"], [1100.0, 1200.0, "idle", "", ""],
        [1080.0, 1150.0, "busy", "sleep", "sh"], [1150.0, 1300.0, "busy", "sleep", "sh"]]}))
    t = tl.Timeline(str(path), clock=Wall(1400.0), mono=Wall().mono)
    assert t.problem is None and not os.path.exists(str(path) + ".corrupt")
    assert t.spans == [(1000.0, 1100.0, "busy", "cpu", "cc1", ()), (1100.0, 1200.0, "idle", "", "", ()),
                       (1200.0, 1300.0, "busy", "sleep", "sh", ())]
