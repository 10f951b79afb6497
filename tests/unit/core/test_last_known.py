"""The one record of what is known of a host (core.last_known): what the box was doing, what was reported,
since when, asleep since when — read back from any stored shape without an error."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from unit.core.status_factory import make_busy, make_status
from workroom.core.last_known import LastKnown

pytestmark = pytest.mark.unit


def test_a_busy_box_reported_idle_is_last_known_busy() -> None:
    """Let it sleep (or an unanswered prompt): busy, though the provider is told idle so the box may sleep."""
    status = make_busy(verdict="IDLE", suppressed=True, asserting=False)
    known = LastKnown().seen(status, now=1000.0)
    assert (known.doing, known.reported, known.since, known.seen_at) == ("busy", "idle", 1000.0, 1000.0)
    assert known.words(now=1090.0) == "last known busy (1 min 30 s ago)"
    stored = known.to_record()
    assert stored["doing"] == "BUSY" and stored["verdict"] == "IDLE"  # "verdict" stays what older apps read
    assert LastKnown.from_record(stored) == known


def test_since_moves_only_when_what_it_does_changes() -> None:
    first = LastKnown().seen(make_busy(), now=10.0)
    again = first.seen(make_busy(), now=50.0)
    assert again.since == 10.0 and again.seen_at == 50.0
    assert not first.differs_in_meaning(again)  # only a newer "seen at": nothing a face says changed
    idle = again.seen(make_status(), now=60.0)
    assert idle.since == 60.0 and idle.doing == "idle" and again.differs_in_meaning(idle)


def test_asleep_since_is_kept_until_it_is_heard_again() -> None:
    known = LastKnown().seen(make_busy(), now=10.0).asleep(now=20.0)
    assert known.asleep(now=99.0).asleep_since == 20.0 and known.asleep_seconds(now=80.0) == 60.0
    assert known.words(now=80.0) == "last known busy (1 min 10 s ago)"
    assert known.seen(make_status(), now=100.0).asleep_since is None


def test_an_older_record_reads_as_doing_what_it_reported() -> None:
    known = LastKnown.from_record({"verdict": "BUSY", "agent_monotonic": 12.5})
    assert known.doing == "busy" and known.reported == "busy" and known.words(now=0) == "last known busy"


@given(st.dictionaries(st.sampled_from(["verdict", "doing", "since", "seen_at", "asleep_since",
                                        "agent_monotonic", "other"]),
                       st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
                                 st.lists(st.integers(), max_size=2))))
def test_any_stored_shape_reads_without_an_error(record: dict[str, Any]) -> None:
    known = LastKnown.from_record(record)
    assert known.doing in (None, "busy", "idle")
    assert LastKnown.from_record(known.to_record()) == known


def test_a_fresh_agent_still_checking_is_not_a_verdict() -> None:
    """A replaced agent's first seconds (`checking_until`): its idle is no judgement, so the record keeps what the
    last agent said (a job that was busy stays last known busy); a busy it already sees is recorded, and where
    nothing was known its first word is."""
    busy = LastKnown().seen(make_busy(), now=10.0)
    checking = make_status(monotonic=1000.0, checking_until=1005.0)
    assert busy.seen(checking, now=20.0) == busy
    assert busy.seen(make_status(monotonic=1006.0, checking_until=1005.0), now=30.0).doing == "idle"
    assert LastKnown().seen(make_busy(checking_until=1005.0), now=5.0).doing == "busy"
    assert LastKnown().seen(checking, now=5.0).doing == "idle"  # nothing known before: the first word


def test_a_held_reason_is_kept_as_the_work_it_holds_never_as_just_now() -> None:
    """The hold's row words ("compiling: cc1plus (just now)") are true only as the status arrives; the record is
    read minutes later (a look without the app: "Busy (seen 5 min ago): compiling: cc1plus")."""
    held = make_busy(busy_reasons=["hold: after cpu: cc1plus (pid 41)"], structured_reasons=[
        {"class": "hold", "subject": "", "pid": None,
         "detail": {"after": {"class": "cpu", "subject": "cc1plus", "pid": 41, "detail": {}}}}])
    known = LastKnown().seen(held, now=1000.0)
    assert known.reasons == ("compiling: cc1plus",)
    assert not any("just now" in r for r in known.reasons)
